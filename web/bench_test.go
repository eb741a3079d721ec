package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// BenchmarkSnapshot renders the list of 1,000 sessions, as the page and
// every stream's first message do.
func BenchmarkSnapshot(b *testing.B) {
	h := home.Home(b.TempDir())
	s, err := New(Config{Client: client.New(h, "", false), Home: h, Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.ln.Close()
	now := time.Now()
	list := make([]api.Session, 1000)
	for i := range list {
		ended := now.Add(-time.Duration(i) * time.Minute)
		list[i] = api.Session{ID: fmt.Sprintf("%026d", i), Adapter: "claude", Origin: api.OriginDiscovered, Status: api.StatusEnded,
			EndedAt: &ended, CreatedAt: ended.Add(-time.Hour), Cwd: "/home/me/src/project", Prompt: "fix the flaky test in the parser and add a regression test"}
	}
	f := filter{Ended: true, Since: 1000 * time.Hour}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.snapshot(list, f); err != nil {
			b.Fatal(err)
		}
	}
}
