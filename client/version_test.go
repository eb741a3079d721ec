package client

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// The version every answer names reaches OnServiceVersion once, however
// many requests the client makes.
func TestServiceVersionIsHeardOnce(t *testing.T) {
	t.Parallel()
	h := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderServiceVersion, "1.2.0")
		w.Write([]byte(`{"pid": 1, "version": "1.2.0"}`))
	})

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
