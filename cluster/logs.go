package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/logs"
)

// Logs sends the session's output through the API's log stream (the
// container's standard output, where the monitor copies the terminal):
// the last o.Lines lines, or all, then with o.Follow what follows until
// the container ends, and a last chunk with the final session. A stream
// the kubelet breaks off while the container runs is reopened where it
// ended (copyLog): nothing is repeated or lost.
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
	return copyLog(ctx, podLog{c: c, id: id, pod: pod.Name}, o, 100*time.Millisecond, emit)
}

// podLog is a session's pod log as the API serves it.
type podLog struct {
	c       *Cluster
	id, pod string
}

func (l podLog) open(ctx context.Context, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	rc, err := l.c.core.Pods(l.c.namespace).GetLogs(l.pod, opts).Stream(ctx)
	if err != nil {
		return nil, l.c.explain("read the log of "+l.id, err)
	}
	return rc, nil
}

func (l podLog) running(ctx context.Context) (bool, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	p, err := l.c.core.Pods(l.c.namespace).Get(ctx, l.pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, l.c.explain("read session "+l.id, err)
	}
	cs := agentStatus(p)
	return cs != nil && cs.State.Running != nil && !podEnded(p), nil
}

func (l podLog) explain(err error) error { return l.c.explain("read the log of "+l.id, err) }

// logSource is where copyLog reads a log: a pod's (podLog), or a test's
// stand-in for a kubelet that breaks streams off.
type logSource interface {
	open(ctx context.Context, opts *corev1.PodLogOptions) (io.ReadCloser, error)
	// running says whether the container still runs (its log may grow).
	running(ctx context.Context) (bool, error)
	explain(err error) error
}

// copyLog copies a container's log to emit. A followed stream carries
// time marks (markedLog takes them out), so that one that ends while the
// container runs, or before the container's last output was read, is
// reopened where it broke off: a followed log ends with one more read
// from its position, which a stream the kubelet ended with the container
// leaves empty. A stream that gave nothing new is reopened after pause,
// doubled each time up to 2 s. A whole log is one read, without marks.
func copyLog(ctx context.Context, src logSource, o api.LogOptions, pause time.Duration, emit func(api.LogChunk) error) error {
	marked := o.Follow
	opts := &corev1.PodLogOptions{Container: containerName, Follow: o.Follow, Timestamps: marked}
	if o.Lines > 0 {
		n := int64(o.Lines)
		opts.TailLines = &n
	}
	marks := newMarkedLog()
	strip := logs.Stripper{KeepColor: o.Color}
	buf := make([]byte, 32<<10)
	var unmarked []byte
	first := pause
	for {
		rc, err := src.open(ctx, opts)
		if err != nil {
			return err
		}
		var rerr error
		gave := false
		for rerr == nil {
			var n int
			n, rerr = rc.Read(buf)
			if n == 0 {
				continue
			}
			out := buf[:n]
			if marked {
				if unmarked = marks.Append(unmarked[:0], out); len(unmarked) == 0 {
					continue
				}
				out = unmarked
			}
			gave = true
			if o.Raw {
				err = emit(api.LogChunk{Data: append([]byte(nil), out...)})
			} else if lines := strip.Write(out); len(lines) > 0 {
				err = emitText(emit, strings.Join(lines, "\n"), o)
			}
			if err != nil {
				rc.Close()
				return err
			}
		}
		rc.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if marked && marks.Unplaced() {
			return errors.New("the kubelet broke the log stream off inside a line that began before the shown tail (a line longer than the runtime's log entry); the rest of the log cannot be placed after it: read it again")
		}
		if !opts.Follow {
			// A whole log, or the last read of a followed one.
			if !errors.Is(rerr, io.EOF) {
				return src.explain(rerr)
			}
			break
		}
		// A followed stream ended: with the container, or broken off.
		running, err := src.running(ctx)
		if err != nil {
			return err
		}
		since, placed, err := marks.Resume()
		if err != nil {
			return fmt.Errorf("the kubelet ended the log stream, and it cannot go on where it stopped: %w", err)
		}
		opts = &corev1.PodLogOptions{Container: containerName, Follow: running, Timestamps: true}
		if placed {
			t := metav1.NewTime(since)
			opts.SinceTime = &t
		} else if o.Lines > 0 {
			// Nothing passed on yet: the same tail again.
			n := int64(o.Lines)
			opts.TailLines = &n
		}
		// A stream that gave nothing new is not reopened at once: the
		// kubelet may be failing every stream for a while.
		if running && !gave {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, 2*time.Second)
		} else {
			pause = first
		}
	}
	if last, ok := strip.Flush(); ok && !o.Raw {
		return emitText(emit, last, o)
	}
	return nil
}

func emitText(emit func(api.LogChunk) error, text string, o api.LogOptions) error {
	if o.TextAsData {
		return emit(api.LogChunk{Data: []byte(text)})
	}
	return emit(api.LogChunk{Text: text})
}
