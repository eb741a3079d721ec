package k8stest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestSchedulable(t *testing.T) {
	for _, tc := range []struct {
		states string
		want   bool
	}{
		{"localhost True ", true},
		{"localhost True", true},
		{"a True\nb True", true},
		{"", false},
		{"localhost False ", false},
		{"localhost  ", false}, // registered, no Ready condition yet
		{`localhost True [{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]`, false},
		{"a True\nb Unknown", false},
	} {
		if got := schedulable(tc.states); got != tc.want {
			t.Errorf("schedulable(%q) = %v, want %v", tc.states, got, tc.want)
		}
	}
}

// TestWaitSchedulable runs a kubectl that answers from a file the test
// changes: tainted, then clear.
func TestWaitSchedulable(t *testing.T) {
	dir := t.TempDir()
	answer := filepath.Join(dir, "answer")
	script := "#!/bin/sh\ncat " + answer + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(answer, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := Harness{Dir: dir, Bin: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	tainted := `localhost False [{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]`

	write("localhost True \n")
	if seen, err := h.WaitSchedulable(context.Background(), 10*time.Second); err != nil || seen != "" {
		t.Fatalf("a schedulable node: %q, %v; want no wait", seen, err)
	}

	write(tainted)
	if _, err := h.WaitSchedulable(context.Background(), time.Second); err == nil || !strings.Contains(err.Error(), "not-ready") {
		t.Fatalf("a node tainted throughout: %v; want an error naming its taint", err)
	}

	write(tainted)
	go func() {
		time.Sleep(700 * time.Millisecond)
		write("localhost True \n")
	}()
	seen, err := h.WaitSchedulable(context.Background(), 20*time.Second)
	if err != nil || !strings.Contains(seen, "not-ready") {
		t.Fatalf("a node that recovers: %q, %v; want what it saw while waiting", seen, err)
	}
}
