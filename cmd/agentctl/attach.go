package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/hosts"
)

// detachKey is Ctrl-]: it leaves the session running. Ctrl-C and Ctrl-D go
// to the agent.
const detachKey = 0x1d

func newAttachCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ID",
		Short: "Join a session's terminal (detach with Ctrl-])",
		Long: `Join the session's terminal: what you type goes to the agent (Ctrl-C and Ctrl-D
included) and its output comes to you, with your window size forwarded.
Press Ctrl-] to detach and leave the session running. Several people may be
attached at once.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			s, err := h.API.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			if s.Origin != api.OriginLaunched {
				return fmt.Errorf("session %s was not started by agentctl; it has no terminal here", s.ID)
			}
			if s.Status != api.StatusRunning {
				return fmt.Errorf("session %s is %s: nothing to attach to (see `agentctl logs %s`)", s.ID, statusText(&s), shortID(s.ID))
			}
			return attachTo(cli, cmd, h, s.ID)
		},
	}
}

// attachTo joins session id's terminal on host h, the way h can.
func attachTo(cli *cli, cmd *cobra.Command, h hosts.Host, id string) error {
	switch a := h.API.(type) {
	case hosts.FrameAttacher:
		return attach(cli, cmd, a, id)
	case hosts.StreamAttacher:
		return attachStreams(cli, cmd, a, id)
	}
	return cannot(h, "attach to a session's terminal")
}

// attachStreams is attach through a hosts.StreamAttacher: the terminal raw, the
// detach key and signals detach, the session's end ends it with its exit
// code. There is no window size to forward: the session's terminal keeps
// the size it started with.
func attachStreams(cli *cli, cmd *cobra.Command, a hosts.StreamAttacher, id string) error {
	in := fdOf(cli.in)
	tty := term.IsTerminal(in)
	out := &modeWriter{w: cli.out}
	defer out.restore()
	if tty {
		old, err := term.MakeRaw(in)
		if err != nil {
			return fmt.Errorf("attach: put the terminal in raw mode: %w", err)
		}
		defer term.Restore(in, old)
		fmt.Fprintf(cli.errOut, "[attached to %s; Ctrl-] detaches]\r\n", shortID(id))
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	s, detached, err := joinStreams(ctx, a, id, cli.in, !tty, out)
	out.restore()
	// A signal ends ctx (through main's context when it came before this
	// command's own handler): either way the person left it running.
	if detached || ctx.Err() != nil {
		fmt.Fprintf(cli.errOut, "\r\n[detached from %s; it keeps running]\r\n", shortID(id))
		return nil
	}
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	fmt.Fprintf(cli.errOut, "\r\n[session %s %s]\r\n", shortID(id), statusText(&s))
	if s.Status.Ended() {
		return exitError{code: exitCodeOf(s)}
	}
	return nil
}

// joinStreams types what is read from in into session id's terminal, up
// to the detach key (or, when endDetaches, the end of in), and copies its
// output to out, until the session ends or ctx does. detached says the
// person left it running.
func joinStreams(ctx context.Context, a hosts.StreamAttacher, id string, in io.Reader, endDetaches bool, out io.Writer) (s api.Session, detached bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var left atomic.Bool
	detach := func() { left.Store(true); cancel() }
	typed, w := io.Pipe()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			if i := bytes.IndexByte(buf[:n], detachKey); i >= 0 {
				w.Write(buf[:i])
				detach()
				return
			}
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				// As attach: the end of input that is no terminal (a pipe,
				// a file) detaches; a terminal's does not end while open.
				if endDetaches {
					detach()
				}
				return
			}
		}
	}()
	stop := context.AfterFunc(ctx, func() { w.CloseWithError(io.EOF) })
	defer stop()
	s, err = a.AttachStreams(ctx, id, typed, out)
	return s, left.Load(), err
}

func attach(cli *cli, cmd *cobra.Command, c hosts.FrameAttacher, id string) error {
	in := fdOf(cli.in)
	rows, cols := uint16(0), uint16(0)
	if w, h, err := term.GetSize(in); err == nil {
		rows, cols = uint16(h), uint16(w)
	}
	at, err := c.Attach(cmd.Context(), id, rows, cols)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	defer at.Close()
	detached := make(chan struct{})
	var detachOnce sync.Once
	detach := func() { detachOnce.Do(func() { close(detached); at.Close() }) }
	// A signal to the attached client detaches it, as the detach key does:
	// the session goes on. It is caught before the banner says "attached",
	// and one that came sooner (main's context took it) detaches too.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			detach()
		case <-cmd.Context().Done():
			detach()
		case <-detached:
		}
	}()
	out := &modeWriter{w: cli.out}
	defer out.restore()
	if term.IsTerminal(in) {
		old, err := term.MakeRaw(in)
		if err != nil {
			return fmt.Errorf("attach: put the terminal in raw mode: %w", err)
		}
		defer term.Restore(in, old)
		fmt.Fprintf(cli.errOut, "[attached to %s; Ctrl-] detaches]\r\n", shortID(id))
	}

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			if w, h, err := term.GetSize(in); err == nil {
				at.Resize(uint16(h), uint16(w))
			}
		}
	}()

	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := cli.in.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				if i := bytes.IndexByte(chunk, detachKey); i >= 0 {
					if i > 0 {
						at.Input(chunk[:i])
					}
					detach()
					return
				}
				if at.Input(chunk) != nil {
					return
				}
			}
			if err != nil {
				// End of input that is not a terminal (a pipe, a file):
				// nothing more will be typed, so detach. A terminal's
				// input does not end while it is open.
				if !term.IsTerminal(in) {
					detach()
				}
				return
			}
		}
	}()

	for {
		typ, payload, err := at.Next()
		if err != nil {
			select {
			case <-detached:
				out.restore()
				fmt.Fprintf(cli.errOut, "\r\n[detached from %s; it keeps running]\r\n", shortID(id))
				return nil
			default:
			}
			out.restore()
			if errors.Is(err, io.EOF) {
				// Neither an end nor a detach: the service went away
				// (restarted, stopped); the session's monitor did not.
				return fmt.Errorf("attach to %s: the connection to the agentctl service ended (restarted or stopped); the session goes on: agentctl attach %s", shortID(id), shortID(id))
			}
			return fmt.Errorf("attach to %s: %w", shortID(id), err)
		}
		switch typ {
		case api.FrameOutput:
			out.Write(payload)
		case api.FrameExit:
			var e api.AttachExit
			json.Unmarshal(payload, &e)
			sess := api.Session{ExitCode: e.ExitCode, Signal: e.Signal}
			out.restore()
			fmt.Fprintf(cli.errOut, "\r\n[session %s ended]\r\n", shortID(id))
			return exitError{code: exitCodeOf(sess)}
		}
	}
}
