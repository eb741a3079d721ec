package client

import (
	"context"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// The version every answer names reaches OnServiceVersion once, however
// many requests the client makes.
func TestServiceVersionIsHeardOnce(t *testing.T) {
	dir, err := os.MkdirTemp("", "acv")
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
		w.Header().Set(api.HeaderServiceVersion, "1.2.0")
		w.Write([]byte(`{"pid": 1, "version": "1.2.0"}`))
	})}
	go srv.Serve(ln)
	defer srv.Close()

	c := New(h, "", false)
	var heard []string
	c.OnServiceVersion(func(v string) { heard = append(heard, v) })
	for range 3 {
		if _, err := c.DaemonStatus(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(heard) != 1 || heard[0] != "1.2.0" {
		t.Fatalf("heard %q, want the service's version once", heard)
	}
}
