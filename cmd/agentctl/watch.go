package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/cmd/agentctl/internal/top"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
)

// watchSource is a host list -w can follow: its sessions and its event
// stream.
type watchSource interface {
	client.Sessions
	hosts.EventSource
}

// watchList is `list -w`: the list again after every change the event
// stream reports. On a terminal the table is redrawn in place (and every
// few seconds, for the ages); in a pipe each change prints a new table
// (or JSON list), and only when it differs from the last.
func watchList(ctx context.Context, cli *cli, c watchSource, o api.ListOptions, asJSON, wide bool, out io.Writer) error {
	// The first request starts the service when allowed; after that the
	// watch never starts one itself: a service stopped on purpose stays
	// stopped while the watch waits for it.
	if _, err := c.List(ctx, api.ListOptions{}); err != nil {
		return err
	}
	if svc, ok := c.(hosts.Service); ok {
		c = svc.ServiceClient().WithoutAutostart()
	}
	tty := false
	if f, ok := out.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd())) && !asJSON
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		top.Follow(ctx, c, func(uint64) { poke() }, func(api.Event) { poke() },
			func(err error) { cli.warn("%v; reconnecting", err) })
	}()
	defer func() { cancel(); <-followed }()
	var last []byte
	draw := func() error {
		lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
		l, err := c.List(lctx, o)
		lcancel()
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		var b bytes.Buffer
		if asJSON {
			if err := json.NewEncoder(&b).Encode(l); err != nil {
				return err
			}
		} else {
			for _, w := range l.Warnings {
				fmt.Fprintf(&b, "warning: %s\n", text.Clean(w))
			}
			if len(l.Sessions) == 0 {
				b.WriteString("no sessions\n")
			} else {
				printSessionTable(&b, l.Sessions, tableWidth(cli, out), wide, true)
			}
		}
		if !tty {
			if bytes.Equal(b.Bytes(), last) {
				return nil
			}
			last = bytes.Clone(b.Bytes())
			if !asJSON && len(last) > 0 {
				b.WriteString("\n")
			}
			_, err := out.Write(b.Bytes())
			return err
		}
		return redraw(out, b.String())
	}
	if tty {
		fmt.Fprint(out, "\x1b[H\x1b[2J")
	}
	var ages <-chan time.Time
	resized := make(chan os.Signal, 1)
	if tty {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		ages = t.C
		signal.Notify(resized, syscall.SIGWINCH)
		defer signal.Stop(resized)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-ages:
		case <-resized:
		}
		if err := draw(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			cli.warn("%v", err)
		}
	}
}

// redraw draws text over the screen out is, in place: it homes the cursor,
// writes each line cut to the screen's width (a wrapped or scrolled line
// would break the redraw) and clears what it writes over, then everything
// below. Lines past the screen's height are counted on its last line.
func redraw(out io.Writer, text string) error {
	width, height := 0, 0
	if f, ok := out.(*os.File); ok {
		width, height, _ = term.GetSize(int(f.Fd()))
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if height > 1 && len(lines) > height-1 {
		more := len(lines) - (height - 2)
		lines = append(lines[:height-2], fmt.Sprintf("… %d more (a larger terminal shows them)", more))
	}
	var s bytes.Buffer
	s.WriteString("\x1b[H")
	for _, l := range lines {
		if width > 0 {
			l = ansi.Truncate(l, width, "")
		}
		s.WriteString(l + "\x1b[K\n")
	}
	s.WriteString("\x1b[J")
	_, err := out.Write(s.Bytes())
	return err
}
