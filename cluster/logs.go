package cluster

import (
	"context"
	"errors"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/logs"
)

// Logs sends the session's output through the API's log stream (the
// container's standard output, where the monitor copies the terminal):
// the last o.Lines lines, or all, then with o.Follow what follows until
// the container ends, and a last chunk with the final session. One stream
// for the container's whole life: nothing is repeated or lost.
func (c *Cluster) Logs(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	full, err := c.resolve(ctx, id)
	if err != nil {
		return err
	}
	// The container must have started for it to have a log.
	started := false
	err = c.untilPod(ctx, full, func(p *corev1.Pod, deleted bool) (bool, error) {
		if p == nil {
			return !o.Follow, nil
		}
		if deleted {
			return true, nil
		}
		if cs := agentStatus(p); cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil) {
			started = true
			return true, nil
		}
		return !o.Follow || podEnded(p) || podStuck(p), nil
	})
	if err != nil {
		return err
	}
	if started {
		if err := c.stream(ctx, full, o, emit); err != nil {
			return err
		}
	}
	if !o.Follow {
		return nil
	}
	// The stream ends with the container; the pod's status says how a
	// moment later.
	err = c.untilPod(ctx, full, func(p *corev1.Pod, deleted bool) (bool, error) {
		if p == nil || deleted {
			return true, nil
		}
		if cs := agentStatus(p); cs != nil && cs.State.Terminated != nil {
			return true, nil
		}
		return podEnded(p), nil
	})
	if err != nil {
		return err
	}
	s, err := c.Get(ctx, full)
	if err != nil {
		return err
	}
	return emit(api.LogChunk{End: true, Session: &s})
}

// stream copies the container's log to emit: raw bytes, or the
// escape-stripped lines.
func (c *Cluster) stream(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	_, pod, err := c.state(ctx, id)
	if err != nil {
		return err
	}
	if pod == nil {
		return nil
	}
	opts := &corev1.PodLogOptions{Container: containerName, Follow: o.Follow}
	if o.Lines > 0 {
		n := int64(o.Lines)
		opts.TailLines = &n
	}
	rc, err := c.core.Pods(c.namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return c.explain("read the log of "+id, err)
	}
	defer rc.Close()
	strip := logs.Stripper{KeepColor: o.Color}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := rc.Read(buf)
		if n > 0 {
			if o.Raw {
				if err := emit(api.LogChunk{Data: append([]byte(nil), buf[:n]...)}); err != nil {
					return err
				}
			} else if lines := strip.Write(buf[:n]); len(lines) > 0 {
				if err := emitText(emit, strings.Join(lines, "\n"), o); err != nil {
					return err
				}
			}
		}
		if rerr != nil {
			if last, ok := strip.Flush(); ok && !o.Raw {
				if err := emitText(emit, last, o); err != nil {
					return err
				}
			}
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.explain("read the log of "+id, rerr)
		}
	}
}

func emitText(emit func(api.LogChunk) error, text string, o api.LogOptions) error {
	if o.TextAsData {
		return emit(api.LogChunk{Data: []byte(text)})
	}
	return emit(api.LogChunk{Text: text})
}
