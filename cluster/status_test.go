package cluster

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentctl/agentctl/api"
)

func TestDerive(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	job := func(stopped bool, conds ...batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
			Name: "agentctl-x", Labels: map[string]string{labelID: "x", labelAdapter: "exec"},
			Annotations: map[string]string{annCommand: `["sh","-c","exit 3"]`, annCwd: "/work"},
		}}
		if stopped {
			j.Annotations[annStoppedBy] = "agentctl stop"
		}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: at, Reason: "BackoffLimitExceeded"})
		}
		return j
	}
	pod := func(phase corev1.PodPhase, st *corev1.ContainerState) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agentctl-x-abcde"}, Status: corev1.PodStatus{Phase: phase}}
		if st != nil {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: *st}}
		}
		return p
	}
	terminated := func(code int32, msg string) *corev1.ContainerState {
		return &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg, StartedAt: at, FinishedAt: at}}
	}
	for _, tc := range []struct {
		name   string
		job    *batchv1.Job
		pod    *corev1.Pod
		status api.Status
		code   int // -1: none
		signal string
	}{
		{"running", job(false), pod(corev1.PodRunning, &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}), api.StatusRunning, -1, ""},
		{"pending", job(false), pod(corev1.PodPending, nil), api.StatusRunning, -1, ""},
		{"no pod yet", job(false), nil, api.StatusRunning, -1, ""},
		{"exited 3", job(false, batchv1.JobFailed), pod(corev1.PodFailed, terminated(3, "")), api.StatusExited, 3, ""},
		{"exited 0", job(false, batchv1.JobComplete), pod(corev1.PodSucceeded, terminated(0, "")), api.StatusExited, 0, ""},
		{"exited 130 by itself", job(false), pod(corev1.PodFailed, terminated(130, "")), api.StatusExited, 130, ""},
		{"agent died of a signal", job(false), pod(corev1.PodFailed, terminated(137, "signal SIGKILL")), api.StatusKilled, -1, "SIGKILL"},
		{"stopped, pod seen ending", job(true), pod(corev1.PodFailed, terminated(143, "signal SIGTERM")), api.StatusKilled, -1, "SIGTERM"},
		{"stopped, pod gone", job(true, batchv1.JobFailed), nil, api.StatusKilled, -1, ""},
		{"complete, pod gone", job(false, batchv1.JobComplete), nil, api.StatusExited, 0, ""},
		{"pod vanished", job(false, batchv1.JobFailed), nil, api.StatusLost, -1, ""},
		{"evicted", job(false), pod(corev1.PodFailed, nil), api.StatusLost, -1, ""},
		{"image not present", job(false), pod(corev1.PodPending, &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}), api.StatusUnknown, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := derive(tc.job, tc.pod)
			if s.Status != tc.status || s.Signal != tc.signal {
				t.Fatalf("status %s signal %q (%q), want %s %q", s.Status, s.Signal, s.Warnings, tc.status, tc.signal)
			}
			switch {
			case tc.code < 0 && s.ExitCode != nil:
				t.Fatalf("exit code %d, want none", *s.ExitCode)
			case tc.code >= 0 && (s.ExitCode == nil || *s.ExitCode != tc.code):
				t.Fatalf("exit code %v, want %d", s.ExitCode, tc.code)
			}
			if s.ID != "x" || s.Adapter != "exec" || s.Cwd != "/work" || len(s.Command) != 3 {
				t.Fatalf("identity: %+v", s)
			}
			if (s.Status == api.StatusLost || s.Status == api.StatusUnknown) && len(s.Warnings) == 0 {
				t.Fatalf("%s without a warning saying why", s.Status)
			}
		})
	}
}

// The monitor's termination message keeps an agent's native id for after
// its pod can no longer be asked; the Job's annotation comes first.
func TestDeriveNativeIDFromTermination(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for _, tc := range []struct {
		name, msg, annotation string
		status                api.Status
		nativeID, signal      string
	}{
		{"exited", "native-id n1", "", api.StatusExited, "n1", ""},
		{"killed", "signal SIGTERM\nnative-id n1", "", api.StatusKilled, "n1", "SIGTERM"},
		{"annotated", "native-id n1", "a1", api.StatusExited, "a1", ""},
		{"none", "", "", api.StatusExited, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "agentctl-x", Labels: map[string]string{labelID: "x", labelAdapter: "pi"}, Annotations: map[string]string{}}}
			if tc.annotation != "" {
				job.Annotations[annNativeID] = tc.annotation
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agentctl-x-abcde"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
				ContainerStatuses: []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: tc.msg, StartedAt: at, FinishedAt: at}}}}}}
			s := derive(job, pod)
			if s.Status != tc.status || s.NativeID != tc.nativeID || s.Signal != tc.signal {
				t.Fatalf("derived %s native %q signal %q, want %s %q %q", s.Status, s.NativeID, s.Signal, tc.status, tc.nativeID, tc.signal)
			}
		})
	}
}
