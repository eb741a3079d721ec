package cluster

import (
	"context"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/agentctl/agentctl/api"
)

// endTimeout bounds the wait for a pod's status to tell how its container
// ended, once its attach stream has closed.
const endTimeout = 30 * time.Second

// AttachStreams joins the session's terminal through the API's attach to
// the pod's monitor: what is read from in is typed into the terminal (the
// container's standard input), and the terminal's output from now on is
// written to out (the container's standard output). It returns when ctx
// ends (the session goes on) or when the container ends, with the session
// as its pod then reports it.
func (c *Cluster) AttachStreams(ctx context.Context, id string, in io.Reader, out io.Writer) (api.Session, error) {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	job, pod, err := c.state(ctx, full)
	if err != nil {
		return api.Session{}, err
	}
	s := derive(job, pod)
	if pod == nil || s.Status != api.StatusRunning || s.StartTime == nil {
		return s, notRunning(c, s)
	}
	req := c.core.RESTClient().Post().Resource("pods").Namespace(c.namespace).Name(pod.Name).
		SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: containerName, Stdin: true, Stdout: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(c.rest, "POST", req.URL())
	if err != nil {
		return s, c.explain("attach to "+full, err)
	}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out})
	if ctx.Err() != nil {
		return s, nil // detached
	}
	if err != nil {
		return s, c.explain("attach to "+full, err)
	}
	// The stream closed with the container; its status says how a moment
	// later.
	wctx, cancel := context.WithTimeout(ctx, endTimeout)
	defer cancel()
	uid := pod.UID
	c.untilPod(wctx, full, func(p *corev1.Pod, deleted bool) (bool, error) {
		return p == nil || p.UID != uid || deleted || podEnded(p), nil
	})
	return c.Get(ctx, full)
}
