package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/agentctl/agentctl/api"
)

// learnTimeout bounds how long a launch looks in the new pod for the
// agent's record (written a moment after its container runs).
const learnTimeout = 15 * time.Second

// isAgent says whether a session runs an agent, whose native truth is in
// its pod (not a plain command).
func isAgent(s api.Session) bool { return s.Adapter != "" && s.Adapter != api.ExecAdapter }

// podQuery asks the agentctl in the session's pod, through the API's exec,
// for the session as it derives it from the agent's own files there.
// transcript > 0 asks for that many messages; explain for the evidence.
func (c *Cluster) podQuery(ctx context.Context, pod *corev1.Pod, id string, transcript int, explain bool) (api.InPod, error) {
	argv := []string{"agentctl", "pod-session", "--spec", specPath}
	if transcript > 0 {
		argv = append(argv, "--transcript", strconv.Itoa(transcript))
	}
	if explain {
		argv = append(argv, "--explain")
	}
	argv = append(argv, podSessionDir(id))
	req := c.core.RESTClient().Post().Resource("pods").Namespace(c.namespace).Name(pod.Name).
		SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: containerName, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.rest, "POST", req.URL())
	if err != nil {
		return api.InPod{}, fmt.Errorf("exec in pod %s: %w", pod.Name, err)
	}
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = c.explain("exec in pod "+pod.Name, err).Error()
		}
		return api.InPod{}, fmt.Errorf("`agentctl pod-session` in pod %s: %s", pod.Name, oneLine(msg))
	}
	var out api.InPod
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return api.InPod{}, fmt.Errorf("`agentctl pod-session` in pod %s answered %q: %w", pod.Name, oneLine(stdout.String()), err)
	}
	return out, nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// withNative adds to s, an agent's session whose container runs, what the
// agentctl in its pod derives from the agent's own files (the native id,
// busy or idle, what it waits for, its counts), and keeps a newly learned
// native id on the Job. A pod that cannot be asked makes the session
// unknown with the reason: the container runs, but what the agent does is
// not known.
func (c *Cluster) withNative(ctx context.Context, job *batchv1.Job, pod *corev1.Pod, s api.Session, transcript int, explain bool) (api.Session, api.InPod) {
	in, err := c.podQuery(ctx, pod, s.ID, transcript, explain)
	if err != nil {
		s.Status = api.StatusUnknown
		s.Warnings = append(s.Warnings, "the agent's state in its pod could not be read: "+err.Error())
		return s, in
	}
	s = mergeNative(s, in.Session)
	if s.NativeID != "" && job.Annotations[annNativeID] != s.NativeID {
		c.annotate(ctx, job.Name, annNativeID, s.NativeID)
	}
	return s, in
}

// mergeNative is s, as the API server reports it, with what the agentctl
// in the pod derived (p). The pod's exit record is first-hand: an agent it
// saw end is ended, though its container may not have stopped yet.
func mergeNative(s, p api.Session) api.Session {
	if p.NativeID != "" {
		s.NativeID = p.NativeID
	}
	s.Model, s.TokensIn, s.TokensOut, s.CostUSD = p.Model, p.TokensIn, p.TokensOut, p.CostUSD
	s.Baseline, s.NativeTotal, s.LastActivity = p.Baseline, p.NativeTotal, p.LastActivity
	s.Prompt, s.Title = p.Prompt, p.Title
	s.Activity, s.ActivitySource, s.ActivitySince = p.Activity, p.ActivitySource, p.ActivitySince
	s.WaitingFor, s.Waiting = p.WaitingFor, p.Waiting
	if p.Status.Ended() || p.Status == api.StatusUnknown {
		s.Status, s.ExitCode, s.Signal, s.EndedAt = p.Status, p.ExitCode, p.Signal, p.EndedAt
	}
	s.Warnings = append(s.Warnings, p.Warnings...)
	return s
}

// annotate sets one annotation of the Job name. A failure leaves it for
// the next query to set, which is no reason to fail this one.
func (c *Cluster) annotate(ctx context.Context, name, key, value string) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	c.batch.Jobs(c.namespace).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
}

// learnStarted is a just-started agent's session with what its pod says,
// asked until the agentctl there has the record (written a moment after
// the container runs) or learnTimeout.
func (c *Cluster) learnStarted(ctx context.Context, id string) (api.Session, error) {
	deadline := time.Now().Add(learnTimeout)
	for {
		job, pod, err := c.state(ctx, id)
		if err != nil {
			return api.Session{}, err
		}
		s := derive(job, pod)
		if pod == nil || s.Status != api.StatusRunning || s.StartTime == nil {
			return s, nil
		}
		m, _ := c.withNative(ctx, job, pod, s, 0, false)
		if m.Status != api.StatusUnknown || time.Now().After(deadline) {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return s, nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// native is session id read now with its agent's native truth when its
// container runs (transcript and explanation as asked), and its Job and
// pod.
func (c *Cluster) native(ctx context.Context, id string, transcript int, explain bool) (api.Session, api.InPod, *corev1.Pod, error) {
	job, pod, err := c.state(ctx, id)
	if err != nil {
		return api.Session{}, api.InPod{}, nil, err
	}
	s := derive(job, pod)
	if !isAgent(s) || pod == nil || s.Status != api.StatusRunning || s.StartTime == nil {
		return s, api.InPod{}, pod, nil
	}
	s, in := c.withNative(ctx, job, pod, s, transcript, explain)
	return s, in, pod, nil
}
