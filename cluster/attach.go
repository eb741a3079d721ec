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
	at, err := c.attachRunning(ctx, id, true)
	full, s := at.id, at.sess
	if err != nil {
		return s, err
	}
	err = at.exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out})
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
	uid := at.pod.UID
	c.untilPod(wctx, full, func(p *corev1.Pod, deleted bool) (bool, error) {
		return p == nil || p.UID != uid || deleted || podEnded(p), nil
	})
	return c.Get(ctx, full)
}

// attachment is a running session's pod, ready for the API's attach.
type attachment struct {
	id   string // the session's full id
	sess api.Session
	pod  *corev1.Pod
	exec remotecommand.Executor
}

// attachRunning resolves id to a running session and prepares the API's
// attach to its pod's monitor: its standard input, and its standard
// output when withOutput. A session that does not run is returned with
// the error that says so.
func (c *Cluster) attachRunning(ctx context.Context, id string, withOutput bool) (attachment, error) {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return attachment{}, err
	}
	job, pod, err := c.state(ctx, full)
	if err != nil {
		return attachment{}, err
	}
	at := attachment{id: full, sess: derive(job, pod), pod: pod}
	if pod == nil || at.sess.Status != api.StatusRunning || at.sess.StartTime == nil {
		return at, notRunning(c, at.sess)
	}
	req := c.core.RESTClient().Post().Resource("pods").Namespace(c.namespace).Name(pod.Name).
		SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: containerName, Stdin: true, Stdout: withOutput}, scheme.ParameterCodec)
	if at.exec, err = remotecommand.NewSPDYExecutor(c.rest, "POST", req.URL()); err != nil {
		return at, c.explain("attach to "+full, err)
	}
	return at, nil
}
