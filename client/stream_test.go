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
	dir, err := os.MkdirTemp("", "acc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h := home.Home(dir)
	ln, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderEventsAfter, "0")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "\n{\"seq\":1,\"type\":\"lock.acquired\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing, as a stopped service
	})}
	go srv.Serve(ln)
	defer srv.Close()

	c := New(h, "", false)
	c.silence = 300 * time.Millisecond
	var got []api.Event
	began := time.Now()
	err = c.Events(context.Background(), EventOptions{}, nil, func(e api.Event) error {
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
