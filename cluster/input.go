package cluster

import (
	"bytes"
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/agentctl/agentctl/api"
)

// inputTimeout bounds one write to a session's terminal.
const inputTimeout = 10 * time.Second

// Input types data into the session's terminal through the API's attach:
// the container's standard input, which the monitor writes to the pty.
func (c *Cluster) Input(ctx context.Context, id string, data []byte) (api.Session, error) {
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
		VersionedParams(&corev1.PodAttachOptions{Container: containerName, Stdin: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(c.rest, "POST", req.URL())
	if err != nil {
		return api.Session{}, c.explain("attach to "+full, err)
	}
	ctx, cancel := context.WithTimeout(ctx, inputTimeout)
	defer cancel()
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(data)}); err != nil {
		return api.Session{}, c.explain("type into "+full, err)
	}
	return s, nil
}
