package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/agentctl/agentctl/api"
)

func TestMergeNative(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fromAPI := func() api.Session {
		return api.Session{ID: "x", Adapter: "pi", Status: api.StatusRunning, StartTime: &started, Cwd: "/work", NativeID: "kept"}
	}
	tokens := int64(12)
	for _, tc := range []struct {
		name     string
		pod      api.Session
		status   api.Status
		nativeID string
		activity string
	}{
		{"idle agent", api.Session{Status: api.StatusRunning, NativeID: "n1", Activity: "idle", TokensIn: &tokens, Warnings: []string{"w"}}, api.StatusRunning, "n1", "idle"},
		{"native id not known in the pod", api.Session{Status: api.StatusRunning, Activity: "busy"}, api.StatusRunning, "kept", "busy"},
		{"the pod's exit record is first-hand", api.Session{Status: api.StatusExited, ExitCode: new(0), NativeID: "n1"}, api.StatusExited, "n1", ""},
		{"unknown in the pod", api.Session{Status: api.StatusUnknown, NativeID: "n1", Warnings: []string{"why"}}, api.StatusUnknown, "n1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mergeNative(fromAPI(), tc.pod)
			if s.Status != tc.status || s.NativeID != tc.nativeID || s.Activity != tc.activity {
				t.Fatalf("merged %s %q %q, want %s %q %q", s.Status, s.NativeID, s.Activity, tc.status, tc.nativeID, tc.activity)
			}
			if s.ID != "x" || s.Cwd != "/work" || s.StartTime != &started {
				t.Errorf("the API server's identity of the session was not kept: %+v", s)
			}
			if !slices.Equal(s.Warnings, tc.pod.Warnings) {
				t.Errorf("warnings %q, want the pod's %q", s.Warnings, tc.pod.Warnings)
			}
		})
	}
}

func TestJobSpec(t *testing.T) {
	t.Parallel()
	for _, hostNet := range []bool{false, true} {
		c := &Cluster{cfg: Config{HostNetwork: hostNet}}
		j := c.job("01abc", nil, nil, "img", "/work")
		pod := j.Spec.Template.Spec
		want := []string{"agentctl", "shim", "--spec", "/etc/agentctl/spec.json", "/run/agentctl/sessions/01abc"}
		if !slices.Equal(pod.Containers[0].Command, want) {
			t.Errorf("command %q, want %q (a session folder of the pod's home)", pod.Containers[0].Command, want)
		}
		if pod.HostNetwork != hostNet {
			t.Errorf("host network %v, want %v", pod.HostNetwork, hostNet)
		}
		if j.Name != "agentctl-01abc" {
			t.Errorf("job name %q", j.Name)
		}
	}
}

// A pod that cannot be asked leaves the agent's session unknown with the
// reason, never ended.
func TestWithNativeExecFails(t *testing.T) {
	t.Parallel()
	rc := &rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second}
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{name: "ctx/ns", namespace: "ns", rest: rc, core: core}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "agentctl-x"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agentctl-x-abcde"}}
	s := api.Session{ID: "x", Adapter: "pi", Status: api.StatusRunning}
	got, _ := c.withNative(context.Background(), job, pod, s, 0, false)
	if got.Status != api.StatusUnknown || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "agentctl-x-abcde") {
		t.Fatalf("session %s %q: want unknown with a warning naming the pod", got.Status, got.Warnings)
	}
}
