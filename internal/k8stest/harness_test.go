package k8stest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, env, err string
		want           Harness
	}{
		{"whole", "KUBECONFIG=/s/kubeconfig\nK8S_IMAGE=img:1\nK8S_BIN=/s/bin\nK8S_NOBODY_KUBECONFIG=/s/nobody\n", "",
			Harness{Kubeconfig: "/s/kubeconfig", Image: "img:1", Bin: "/s/bin", NobodyKubeconfig: "/s/nobody"}},
		{"no image", "KUBECONFIG=/s/kubeconfig\nK8S_BIN=/s/bin\n", "no K8S_IMAGE", Harness{}},
		{"no file", "", "no such file", Harness{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.env != "" {
				if err := os.WriteFile(filepath.Join(dir, "env"), []byte(tc.env), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Read(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Read = %+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			tc.want.Dir = dir
			if err != nil || got != tc.want {
				t.Fatalf("Read = %+v, %v; want %+v", got, err, tc.want)
			}
			if got.Kubectl() != "/s/bin/kubectl" {
				t.Errorf("kubectl %q", got.Kubectl())
			}
		})
	}
}
