package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// A stream the service stops feeding (frozen mid-stream: not even a
// keep-alive comes) ends with a clear error instead of hanging; keep-alive
// lines are not events.
func TestSilentStreamEnds(t *testing.T) {
	h := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderEventsAfter, "0")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "\n{\"seq\":1,\"type\":\"lock.acquired\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing, as a stopped service
	})

	c := New(h, "", false)
	c.silence = 300 * time.Millisecond
	var got []api.Event
	began := time.Now()
	err := c.Events(context.Background(), EventOptions{}, nil, func(e api.Event) error {
		got = append(got, e)
		return nil
	})
	if !errors.Is(err, errSilent) {
		t.Fatalf("Events on a silent stream = %v, want errSilent", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("gave up after %s", took)
	}
	if len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("events = %+v, want the one sent (keep-alives are not events)", got)
	}
}

// fakeService serves handler on the socket of a home of its own, as the
// service would, until the test ends.
func fakeService(t *testing.T, handler http.HandlerFunc) home.Home {
	t.Helper()
	// A short folder: a socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "acc")
	if err != nil {
		t.Fatal(err)
	}
	h := home.Home(dir)
	ln, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		os.RemoveAll(dir)
	})
	return h
}
