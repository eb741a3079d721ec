package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentctl/agentctl/api"
)

// snapshot is every session of the namespace as the API server has it now:
// two requests (the Jobs and the pods agentctl labelled), whatever the
// number of sessions.
func (c *Cluster) snapshot(ctx context.Context, selector string) ([]api.Session, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	jobs, err := c.batch.Jobs(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, c.explain("list sessions", err)
	}
	pods, err := c.core.Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, c.explain("list sessions", err)
	}
	byID := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		byID[p.Labels[labelID]] = append(byID[p.Labels[labelID]], p)
	}
	out := make([]api.Session, 0, len(jobs.Items))
	for i := range jobs.Items {
		j := &jobs.Items[i]
		id := j.Labels[labelID]
		out = append(out, derive(j, ownPod(j, byID[id])))
	}
	sort.Slice(out, func(i, k int) bool { return out[i].CreatedAt.Before(out[k].CreatedAt) })
	return out, nil
}

// ownPod is the pod of job among pods: one the Job made.
func ownPod(job *batchv1.Job, pods []*corev1.Pod) *corev1.Pod {
	var own []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID {
			own = append(own, p)
		}
	}
	return newestPod(own)
}

// List is the namespace's sessions, narrowed as o says. When the API server
// does not answer, the sessions of its last answer are listed with status
// unknown and a warning naming the cluster: never as stopped; before any
// answer, that is the error.
func (c *Cluster) List(ctx context.Context, o api.ListOptions) (api.SessionList, error) {
	all, err := c.snapshot(ctx, labelID)
	var warnings []string
	if err != nil {
		c.mu.Lock()
		seen := c.last != nil
		all = append([]api.Session(nil), c.last...)
		c.mu.Unlock()
		// With no answer seen before (a command's first request), the
		// caller's own record of what it saw last (the CLI's last-seen
		// cache) is the one to show.
		if !seen || api.CodeOf(err) == api.CodeForbidden || api.CodeOf(err) == api.CodeInvalid {
			return api.SessionList{}, err
		}
		for i := range all {
			if !all[i].Status.Ended() {
				all[i].Status = api.StatusUnknown
				all[i].Warnings = append(all[i].Warnings, "the cluster does not answer: status unknown")
			}
		}
		warnings = append(warnings, err.Error())
	} else {
		c.mu.Lock()
		c.last = all
		c.mu.Unlock()
	}
	kept := []api.Session{}
	since := o.Since
	if since == 0 {
		since = 7 * 24 * time.Hour
	}
	for _, s := range all {
		if keep(s, o, since) {
			kept = append(kept, s)
		}
	}
	return api.SessionList{Sessions: kept, Warnings: warnings}, nil
}

// keep says whether s passes o's filters.
func keep(s api.Session, o api.ListOptions, since time.Duration) bool {
	switch {
	case o.Status != "" && string(s.Status) != o.Status:
		return false
	case o.Status == "" && !o.All && s.Status.Ended():
		return false
	case o.All && s.Status.Ended() && s.EndedAt != nil && time.Since(*s.EndedAt) > since:
		return false
	case o.Adapter != "" && s.Adapter != o.Adapter:
		return false
	case o.Group != "" && s.Group != o.Group:
		return false
	}
	return true
}

// Get is one session, by id or unique prefix of one: as the API server
// reports it, and for an agent whose container runs, with what the
// agentctl in its pod derives from the agent's own files (podQuery).
func (c *Cluster) Get(ctx context.Context, id string) (api.Session, error) {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	s, _, _, err := c.native(ctx, full, 0, false)
	return s, err
}

// resolve turns an id or a unique prefix into the session's full id.
func (c *Cluster) resolve(ctx context.Context, prefix string) (string, error) {
	if prefix == "" {
		return "", api.Errorf(api.CodeInvalid, "an empty session id")
	}
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	jobs, err := c.batch.Jobs(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelID})
	if err != nil {
		return "", c.explain("find session "+prefix, err)
	}
	var found []string
	for _, j := range jobs.Items {
		if id := j.Labels[labelID]; strings.HasPrefix(id, prefix) {
			if id == prefix {
				return id, nil
			}
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", api.Errorf(api.CodeNotFound, "cluster %s: no session %s", c.name, prefix)
	case 1:
		return found[0], nil
	}
	return "", api.Errorf(api.CodeAmbiguous, "cluster %s: %s names %d sessions: give more of the id", c.name, prefix, len(found))
}

// state is a session's Job and its pod (nil when none), read now.
func (c *Cluster) state(ctx context.Context, id string) (*batchv1.Job, *corev1.Pod, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	job, err := c.batch.Jobs(c.namespace).Get(ctx, jobName(id), metav1.GetOptions{})
	if err != nil {
		return nil, nil, c.explain("read session "+id, err)
	}
	pods, err := c.core.Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelID + "=" + id})
	if err != nil {
		return nil, nil, c.explain("read session "+id, err)
	}
	ptrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		ptrs[i] = &pods.Items[i]
	}
	return job, ownPod(job, ptrs), nil
}

// Transcript is the end of the session: for an agent whose container
// runs, its last n messages from its own store in the pod (through the
// API's exec); otherwise the end of its output, read through the API's log
// stream (an ended pod cannot be asked).
func (c *Cluster) Transcript(ctx context.Context, id string, n int) (api.Transcript, error) {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return api.Transcript{}, err
	}
	sess, in, pod, err := c.native(ctx, full, max(n, 1), false)
	if err != nil {
		return api.Transcript{}, err
	}
	if in.Transcript != nil {
		t := *in.Transcript
		t.Session = sess
		return t, nil
	}
	var note string
	if isAgent(sess) && pod != nil && sess.Status == api.StatusUnknown {
		note = "the agent's own store in its pod could not be read: its output log instead"
	} else if isAgent(sess) {
		note = "the agent's own store was in its pod, which no longer runs: its output log instead"
	}
	t, err := c.logTranscript(ctx, sess, n)
	if note != "" {
		t.Warnings = append(t.Warnings, note)
	}
	return t, err
}

// logTranscript is the end of sess's output log as one message.
func (c *Cluster) logTranscript(ctx context.Context, sess api.Session, n int) (api.Transcript, error) {
	var lines []string
	err := c.Logs(ctx, sess.ID, api.LogOptions{Lines: max(n, 1) * 20}, func(ch api.LogChunk) error {
		if ch.Text != "" {
			lines = append(lines, strings.Split(ch.Text, "\n")...)
		}
		return nil
	})
	if err != nil {
		return api.Transcript{}, err
	}
	t := api.Transcript{Session: sess, Source: "log", Messages: []api.Message{}}
	if len(lines) > 0 {
		t.Messages = append(t.Messages, api.Message{Role: "output", Text: strings.Join(lines, "\n")})
	}
	return t, nil
}

func notRunning(c *Cluster, s api.Session) error {
	return api.Errorf(api.CodeNotRunning, "cluster %s: session %s is %s", c.name, s.ID, statusText(s))
}

func statusText(s api.Session) string {
	if s.ExitCode != nil && s.Status == api.StatusExited {
		return fmt.Sprintf("exited(%d)", *s.ExitCode)
	}
	return string(s.Status)
}

// Explain is the evidence behind a session's status: what the API server
// says of its pod, and for an agent whose container runs, the evidence the
// agentctl in the pod weighed (its record, the agent's liveness, the
// agent's own files).
func (c *Cluster) Explain(ctx context.Context, id string) (api.Explanation, error) {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return api.Explanation{}, err
	}
	sess, in, pod, err := c.native(ctx, full, 0, true)
	if err != nil {
		return api.Explanation{}, err
	}
	ex := api.Explanation{Session: sess, Rule: api.RuleCluster, Reason: clusterReason(sess)}
	if pod != nil {
		ex.Evidence = append(ex.Evidence, api.Evidence{Kind: "pod", Source: "pod " + pod.Name, Says: podSays(pod)})
	}
	if in.Explanation != nil {
		ex.Rule, ex.Reason = in.Explanation.Rule, in.Explanation.Reason
		ex.Evidence = append(ex.Evidence, in.Explanation.Evidence...)
	}
	return ex, nil
}

// clusterReason says why a session has its status, as the API server
// reports its pod.
func clusterReason(s api.Session) string {
	switch {
	case s.Status == api.StatusUnknown && len(s.Warnings) > 0:
		return s.Warnings[len(s.Warnings)-1]
	case s.Status == api.StatusRunning:
		return "the API server reports the session's container running (or on its way)"
	case s.Status.Ended():
		return "the API server reports how the session's container ended: " + statusText(s)
	}
	return "the API server says nothing that decides it"
}

// podSays is what the API server reports of the agent's container.
func podSays(p *corev1.Pod) string {
	cs := agentStatus(p)
	switch {
	case cs == nil:
		return fmt.Sprintf("phase %s, no container status yet", p.Status.Phase)
	case cs.State.Running != nil:
		return "container running since " + cs.State.Running.StartedAt.UTC().Format(time.RFC3339)
	case cs.State.Terminated != nil:
		t := cs.State.Terminated
		return strings.TrimSpace(fmt.Sprintf("container terminated with code %d (%s) %s", t.ExitCode, t.Reason, t.Message))
	case cs.State.Waiting != nil:
		return "container waiting: " + cs.State.Waiting.Reason
	}
	return fmt.Sprintf("phase %s", p.Status.Phase)
}
