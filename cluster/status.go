package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/spawn/monitorapi"
)

// What agentctl writes on its Jobs and pods.
const (
	labelID      = "agentctl.dev/id"
	labelAdapter = "agentctl.dev/adapter"
	labelGroup   = "agentctl.dev/group"
	labelName    = "agentctl.dev/name"
	// Names and groups are kept whole here: a label value is limited.
	annName    = "agentctl.dev/name"
	annGroup   = "agentctl.dev/group"
	annCwd     = "agentctl.dev/cwd"
	annCommand = "agentctl.dev/command" // JSON argv, plain commands only
	// annNativeID is the agent's own session id, once learned from its
	// pod; annResumeOf the session a resume continues.
	annNativeID = "agentctl.dev/native-id"
	annResumeOf = "agentctl.dev/resume-of"
	// annStoppedBy says a stop was asked for: the session then ended
	// killed, whatever its container reported.
	annStoppedBy = "agentctl.dev/stopped-by"
	// containerName is the agent's container in the pod.
	containerName = "agent"
)

// jobName is the Job (and the Secret, and the pod's prefix) of session id.
func jobName(id string) string { return "agentctl-" + id }

// derive is a session as the API server reports it now: from the Job, and
// its pod when there is one (nil otherwise). It is the one status rule of
// cluster sessions.
func derive(job *batchv1.Job, pod *corev1.Pod) api.Session {
	s := api.Session{
		ID:        job.Labels[labelID],
		Adapter:   job.Labels[labelAdapter],
		Origin:    api.OriginLaunched,
		Name:      job.Annotations[annName],
		Group:     job.Annotations[annGroup],
		Cwd:       job.Annotations[annCwd],
		CreatedAt: job.CreationTimestamp.UTC(),
		NativeID:  job.Annotations[annNativeID],
		ResumeOf:  job.Annotations[annResumeOf],
	}
	if cmd := job.Annotations[annCommand]; cmd != "" {
		json.Unmarshal([]byte(cmd), &s.Command)
	}
	stoppedBy := job.Annotations[annStoppedBy]
	if pod != nil {
		cs := agentStatus(pod)
		if cs != nil && cs.State.Terminated != nil {
			ended(&s, cs.State.Terminated, stoppedBy)
			return s
		}
		if cs != nil && cs.State.Running != nil {
			s.Status = api.StatusRunning
			t := cs.State.Running.StartedAt.UTC()
			s.StartTime = &t
			return s
		}
		switch {
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			// Ended with no record of its container: evicted, or its node
			// went away.
			s.Status = api.StatusLost
			s.Warnings = append(s.Warnings, fmt.Sprintf("pod %s ended without its container's exit (%s)", pod.Name, podReason(pod)))
		case cs != nil && cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason]:
			s.Status = api.StatusUnknown
			s.Warnings = append(s.Warnings, fmt.Sprintf("pod %s cannot start: %s: %s", pod.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		default:
			// Scheduled, pulling, creating: on its way, the monitor not
			// running yet.
			s.Status = api.StatusRunning
			if why := pendingReason(pod); why != "" {
				s.Warnings = append(s.Warnings, "pod "+pod.Name+" is not running yet: "+why)
			}
		}
		return s
	}
	switch {
	case stoppedBy != "":
		s.Status = api.StatusKilled
		if t := jobEnd(job); t != nil {
			s.EndedAt = t
		}
	case jobCondition(job, batchv1.JobComplete) != nil:
		// Complete means its one pod succeeded: the agent exited 0.
		s.Status = api.StatusExited
		s.ExitCode = new(0)
		s.EndedAt = jobEnd(job)
	case jobCondition(job, batchv1.JobFailed) != nil:
		c := jobCondition(job, batchv1.JobFailed)
		s.Status = api.StatusLost
		s.EndedAt = new(c.LastTransitionTime.UTC())
		s.Warnings = append(s.Warnings, fmt.Sprintf("the pod of Job %s vanished without a termination record (%s: %s)", job.Name, c.Reason, c.Message))
	case job.Status.Active == 0 && job.Status.Failed > 0:
		s.Status = api.StatusLost
		s.Warnings = append(s.Warnings, fmt.Sprintf("the pod of Job %s vanished without a termination record", job.Name))
	default:
		s.Status = api.StatusRunning
		s.Warnings = append(s.Warnings, "Job "+job.Name+" has no pod yet")
	}
	return s
}

// ended fills in how the agent ended from its container's termination.
func ended(s *api.Session, t *corev1.ContainerStateTerminated, stoppedBy string) {
	end := t.FinishedAt.UTC()
	start := t.StartedAt.UTC()
	s.EndedAt, s.StartTime = &end, &start
	// The monitor's termination message: a line naming the signal the
	// agent died of, a line with its native id (spawn.RunContainer).
	sig := ""
	for _, line := range strings.Split(t.Message, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, monitorapi.TerminationSignal); ok && unix.SignalNum(v) != 0 {
			sig = v
		}
		if v, ok := strings.CutPrefix(line, monitorapi.TerminationNativeID); ok && s.NativeID == "" {
			s.NativeID = v
		}
	}
	if sig != "" {
		s.Status, s.Signal = api.StatusKilled, sig
		return
	}
	code := int(t.ExitCode)
	switch {
	case stoppedBy != "":
		s.Status = api.StatusKilled
		s.ExitCode = &code
	case t.Reason == "OOMKilled":
		s.Status, s.Signal = api.StatusKilled, "SIGKILL"
		s.Warnings = append(s.Warnings, "the container ran out of memory (OOMKilled)")
	default:
		s.Status = api.StatusExited
		s.ExitCode = &code
	}
}

// fatalWaiting are the reasons a container waits that no waiting cures.
var fatalWaiting = map[string]bool{
	"ErrImageNeverPull":          true,
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// agentStatus is the agent container's status, nil before the kubelet
// reported one.
func agentStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == containerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// pendingReason says why a pod does not run yet, "" when nothing says.
func pendingReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	if cs := agentStatus(pod); cs != nil && cs.State.Waiting != nil {
		return strings.TrimSuffix(cs.State.Waiting.Reason+": "+cs.State.Waiting.Message, ": ")
	}
	return ""
}

func podReason(pod *corev1.Pod) string {
	if pod.Status.Reason == "" && pod.Status.Message == "" {
		return "no reason given"
	}
	return strings.TrimSuffix(pod.Status.Reason+": "+pod.Status.Message, ": ")
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func jobEnd(job *batchv1.Job) *time.Time {
	if job.Status.CompletionTime != nil {
		return new(job.Status.CompletionTime.UTC())
	}
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete} {
		if c := jobCondition(job, t); c != nil {
			return new(c.LastTransitionTime.UTC())
		}
	}
	return nil
}

// newestPod picks, of a session's pods, the one made last (a Job of ours
// makes one; a replaced one would be older).
func newestPod(pods []*corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	for _, p := range pods {
		if best == nil || p.CreationTimestamp.After(best.CreationTimestamp.Time) {
			best = p
		}
	}
	return best
}

// podEnded says the pod's agent will not run again: its container ended,
// or the pod did.
func podEnded(p *corev1.Pod) bool {
	if cs := agentStatus(p); cs != nil && cs.State.Terminated != nil {
		return true
	}
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// podStuck says the pod's container waits for what no waiting cures.
func podStuck(p *corev1.Pod) bool {
	cs := agentStatus(p)
	return cs != nil && cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason]
}
