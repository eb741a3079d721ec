package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor"
)

// The test binary doubles as the session monitor, as agentctl does.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "shim" {
		os.Exit(spawn.RunShim(os.Args[2]))
	}
	os.Exit(m.Run())
}

// runService runs a service for home in this process until the returned
// stop is called.
func runService(t *testing.T, h home.Home) (stop func()) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- supervisor.Run(ctx, supervisor.Options{Home: h, Exe: exe, Logger: slog.New(slog.DiscardHandler)})
	}()
	c := client.New(h, "", false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.DaemonStatus(context.Background()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("service did not answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// `agentctl events` carries on across a service restart from the last
// event it printed: every event once, in order.
func TestStreamEventsAcrossRestart(t *testing.T) {
	// Not parallel: it restarts its service, which a busy machine may make
	// miss the wait below.
	dir, err := os.MkdirTemp("", "ac")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h := home.Home(dir)
	stop := runService(t, h)
	c := client.New(h, "", false)
	work := t.TempDir()
	lockUnlock := func(n int) {
		for range n {
			if _, err := c.Lock(context.Background(), api.LockRequest{Directory: work}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Unlock(context.Background(), work); err != nil {
				t.Fatal(err)
			}
		}
	}
	lockUnlock(2) // events 1-4, before the stream: --since 4 skips them

	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	streamed := make(chan error, 1)
	go func() {
		streamed <- streamEvents(ctx, c, client.EventOptions{Since: "4", Types: []string{"lock.*"}}, w)
		w.Close()
	}()
	lines := make(chan api.Event, 100)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var e api.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("not JSON: %q", sc.Text())
			}
			lines <- e
		}
		close(lines)
	}()
	next := func() api.Event {
		t.Helper()
		select {
		case e := <-lines:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return api.Event{}
	}
	lockUnlock(3)
	var got []api.Event
	for range 6 {
		got = append(got, next())
	}
	stop()
	runService(t, h)
	lockUnlock(3)
	for range 6 {
		got = append(got, next())
	}
	cancel()
	if err := <-streamed; err != nil {
		t.Fatalf("streamEvents: %v", err)
	}
	if got[0].Seq != 5 {
		t.Fatalf("first event printed has seq %d, want 5", got[0].Seq)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("seq %d after %d: a gap or a duplicate across the restart", got[i].Seq, got[i-1].Seq)
		}
	}
}
