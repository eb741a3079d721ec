package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// detachKey is Ctrl-]: it leaves the session running. Ctrl-C and Ctrl-D go
// to the agent.
const detachKey = 0x1d

func newAttachCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "attach ID",
		Short: "Join a session's terminal (detach with Ctrl-])",
		Long: `Join the session's terminal: what you type goes to the agent (Ctrl-C and Ctrl-D
included) and its output comes to you, with your window size forwarded.
Press Ctrl-] to detach and leave the session running. Several people may be
attached at once.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, id, err := clientFor(a[0])
			if err != nil {
				return err
			}
			s, err := c.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			if s.Origin != api.OriginLaunched {
				return fmt.Errorf("session %s was not started by agentctl; it has no terminal here", s.ID)
			}
			if s.Status != api.StatusRunning {
				return fmt.Errorf("session %s is %s: nothing to attach to (see `agentctl logs %s`)", s.ID, statusText(s), shortID(s.ID))
			}
			return attach(cmd, c, s.ID)
		},
	}
}

func attach(cmd *cobra.Command, c *client.Client, id string) error {
	in := int(os.Stdin.Fd())
	rows, cols := uint16(0), uint16(0)
	if w, h, err := term.GetSize(in); err == nil {
		rows, cols = uint16(h), uint16(w)
	}
	at, err := c.Attach(cmd.Context(), id, rows, cols)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	defer at.Close()
	out := &modeWriter{w: os.Stdout}
	defer out.restore()
	if term.IsTerminal(in) {
		old, err := term.MakeRaw(in)
		if err != nil {
			return fmt.Errorf("attach: put the terminal in raw mode: %w", err)
		}
		defer term.Restore(in, old)
		fmt.Fprintf(os.Stderr, "[attached to %s; Ctrl-] detaches]\r\n", shortID(id))
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

	detached := make(chan struct{})
	var detachOnce sync.Once
	detach := func() { detachOnce.Do(func() { close(detached); at.Close() }) }
	// A signal to the attached client detaches it, as the detach key does:
	// the session goes on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			detach()
		}
	}()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
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
				fmt.Fprintf(os.Stderr, "\r\n[detached from %s; it keeps running]\r\n", shortID(id))
				return nil
			default:
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("attach: %w", err)
		}
		switch typ {
		case api.FrameOutput:
			out.Write(payload)
		case api.FrameExit:
			var e api.AttachExit
			json.Unmarshal(payload, &e)
			sess := api.Session{ExitCode: e.ExitCode, Signal: e.Signal}
			out.restore()
			fmt.Fprintf(os.Stderr, "\r\n[session %s ended]\r\n", shortID(id))
			return exitError{code: exitCodeOf(sess)}
		}
	}
}
