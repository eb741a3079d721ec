package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/spawn/monitorapi"
)

// Stop ends a running session: it marks the Job stopped, deletes the pod
// with the agent's grace period (the kubelet sends the monitor SIGTERM; the
// monitor gives the agent its stop signal, then SIGKILL), and returns once
// the API server says the pod is gone: its containers, and so its cgroup,
// are no more.
func (c *Cluster) Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error) {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	job, pod, err := c.state(ctx, full)
	if err != nil {
		return api.Session{}, err
	}
	if s := derive(job, pod); s.Status.Ended() {
		return s, notRunning(c, s)
	}
	grace := monitorapi.ContainerGrace
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d < 0 {
			return api.Session{}, api.Errorf(api.CodeInvalid, "--timeout %q: want a duration such as 30s", req.Timeout)
		}
		// The monitor's own grace, and time for it to write its records.
		grace = d + 5*time.Second
	}
	if req.Force {
		grace = time.Second
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annStoppedBy: "agentctl stop"}}})
	pctx, cancel := apiCtx(ctx)
	defer cancel()
	if _, err := c.batch.Jobs(c.namespace).Patch(pctx, job.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		return api.Session{}, c.explain("stop "+full, err)
	}
	if pod == nil {
		// No pod yet: the Job goes, and with it any pod it was making.
		bg := metav1.DeletePropagationBackground
		if err := c.batch.Jobs(c.namespace).Delete(pctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			return api.Session{}, c.explain("stop "+full, err)
		}
		s := derive(job, nil)
		s.Status = api.StatusKilled
		return s, nil
	}
	secs := int64(grace / time.Second)
	uid := pod.UID
	err = c.core.Pods(c.namespace).Delete(pctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &secs,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil {
		return api.Session{}, c.explain("stop "+full, err)
	}
	// Confirmed by the API server: the pod is gone once the kubelet has
	// seen its containers end.
	wctx, wcancel := context.WithTimeout(ctx, grace+time.Minute)
	defer wcancel()
	var last *corev1.Pod
	err = c.untilPod(wctx, full, func(p *corev1.Pod, deleted bool) (bool, error) {
		if p == nil || (deleted && p.UID == uid) {
			return true, nil
		}
		if p.UID == uid {
			last = p
		}
		return false, nil
	})
	if err != nil {
		return api.Session{}, fmt.Errorf("cluster %s: stop %s: the pod %s is not gone: %w", c.name, full, pod.Name, err)
	}
	s, err := c.Get(ctx, full)
	if err != nil {
		return api.Session{}, err
	}
	// The container's last state, seen on its way out, says how it ended.
	if last != nil {
		if cs := agentStatus(last); cs != nil && cs.State.Terminated != nil {
			ended(&s, cs.State.Terminated, "agentctl stop")
		}
	}
	return s, nil
}
