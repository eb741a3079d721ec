package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// syncTimeout bounds how long an event stream waits for its first view of
// the namespace.
const syncTimeout = 30 * time.Second

// byID indexes agentctl's Jobs and pods by session id.
const byID = "agentctl-id"

// Events streams the namespace's session events (session.started when a
// session's container runs, session.stopped or session.lost when it ends)
// until ctx ends or fn fails, from two informers (the Jobs and the pods
// agentctl labelled): one watch each for the whole namespace, whatever the
// number of sessions, and no polling. The stream starts now: the cluster
// keeps no journal to replay (o.Since is not honoured), and started is
// called with 0 once the informers have the namespace's state. It fails
// when the API server stops answering, so the caller can say so and open
// it again.
func (c *Cluster) Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error {
	filter, err := api.ParseEventFilter(o.Types)
	if err != nil {
		return api.Errorf(api.CodeInvalid, "%v", err)
	}
	// One request first: an API server that does not answer is told now,
	// not by informers retrying in silence.
	if _, err := c.snapshot(ctx, labelID); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	jobs := c.informer(c.batch.RESTClient(), "jobs", &batchv1.Job{}, cancel)
	pods := c.informer(c.core.RESTClient(), "pods", &corev1.Pod{}, cancel)
	changed := make(chan string, 256)
	note := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		select {
		case changed <- m.GetLabels()[labelID]:
		case <-ctx.Done():
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { note(obj) },
		UpdateFunc: func(_, obj any) { note(obj) },
		DeleteFunc: note,
	}
	for _, inf := range []cache.SharedIndexInformer{jobs, pods} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("cluster %s: follow events: %w", c.name, err)
		}
		go inf.RunWithContext(ctx)
	}
	sctx, scancel := context.WithTimeout(ctx, syncTimeout)
	ok := cache.WaitForCacheSync(sctx.Done(), jobs.HasSynced, pods.HasSynced)
	scancel()
	if !ok {
		if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return api.Errorf(api.CodeInternal, "cluster %s: follow events: no view of the namespace within %s: check that the API server answers", c.name, syncTimeout)
	}

	// What each session was when last seen: the stream tells changes of it.
	seen := map[string]api.Status{}
	state := func(id string) (api.Session, bool) {
		objs, _ := jobs.GetIndexer().ByIndex(byID, id)
		if len(objs) == 0 {
			return api.Session{}, false
		}
		job := objs[0].(*batchv1.Job)
		podObjs, _ := pods.GetIndexer().ByIndex(byID, id)
		ps := make([]*corev1.Pod, 0, len(podObjs))
		for _, p := range podObjs {
			ps = append(ps, p.(*corev1.Pod))
		}
		return derive(job, ownPod(job, ps)), true
	}
	for _, obj := range jobs.GetStore().List() {
		id := obj.(*batchv1.Job).Labels[labelID]
		if s, ok := state(id); ok {
			seen[id] = startedStatus(s)
		}
	}
	if started != nil {
		started(0)
	}
	var seq uint64
	for {
		var id string
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return ctx.Err()
		case id = <-changed:
		}
		s, ok := state(id)
		if !ok {
			// The Job is gone: its session with it (deleted, or pruned).
			delete(seen, id)
			continue
		}
		now := startedStatus(s)
		before, known := seen[id]
		seen[id] = now
		if known && before == now {
			continue
		}
		typ := ""
		switch {
		case now == api.StatusRunning:
			typ = api.EventSessionStarted
		case now == api.StatusLost:
			typ = api.EventSessionLost
		case now.Ended():
			typ = api.EventSessionStopped
		}
		if typ == "" || !filter.Match(typ) {
			continue
		}
		seq++
		e := api.Event{Seq: seq, Type: typ, Adapter: s.Adapter, SessionID: s.ID, Timestamp: time.Now().UTC(), Session: &s}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// startedStatus is a session's status as the stream tells it: running only
// once its container runs (a pod on its way is not started yet, "").
func startedStatus(s api.Session) api.Status {
	if s.Status == api.StatusRunning && s.StartTime == nil {
		return ""
	}
	return s.Status
}

// informer follows the namespace's objects of resource that agentctl
// labelled, indexed by session id. A watch that fails for another reason
// than its normal end cancels ctx with the failure explained.
func (c *Cluster) informer(rc rest.Interface, resource string, example runtime.Object, fail context.CancelCauseFunc) cache.SharedIndexInformer {
	lw := cache.NewFilteredListWatchFromClient(rc, resource, c.namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = labelID
	})
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{byID: func(obj any) ([]string, error) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		return []string{m.GetLabels()[labelID]}, nil
	}})
	inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return // a watch's normal end: the informer opens the next
		}
		fail(c.explain("follow events", err))
	})
	return inf
}
