package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// The service watches the agents' stores: daemon status says so, and a
// session file written or removed between two lists is seen by the
// second, through the watch.
func TestStoreChangesAreSeenThroughTheWatch(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	var userHome string
	for _, kv := range e.Vars {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	project := filepath.Join(userHome, ".claude", "projects", "-w-p")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	record := func(typ, text string) string {
		b, _ := json.Marshal(map[string]any{
			"type": typ, "uuid": "u-" + text, "sessionId": "s", "cwd": "/w/p",
			"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
			"message":   map[string]any{"role": typ, "content": text},
		})
		return string(b) + "\n"
	}
	write := func(id, text string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(project, id+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	prompts := func() map[string]string {
		out := map[string]string{}
		for _, s := range e.List("-a").Sessions {
			if s.Origin == api.OriginDiscovered {
				out[s.NativeID] = s.Prompt
			}
		}
		return out
	}
	first, second := "0b6c1b1e-0000-4000-8000-00000000e2e1", "0b6c1b1e-0000-4000-8000-00000000e2e2"
	write(first, record("user", "first prompt"))
	if got := prompts(); got[first] != "first prompt" || len(got) != 1 {
		t.Fatalf("first list: %v", got)
	}
	var st api.DaemonStatus
	e.JSON(&st, "daemon", "status", "--json")
	if st.Watch == nil || st.Watch.Mode != "inotify" || st.Watch.Folders < 2 || st.Watch.Unwatched != 0 {
		t.Fatalf("daemon status watch = %+v, want the projects folders watched by inotify", st.Watch)
	}
	if out := e.MustRun("daemon", "status"); !strings.Contains(out, "folders watched (inotify)") {
		t.Errorf("daemon status does not say the stores are watched:\n%s", out)
	}
	// A new session, with nothing else changing in between.
	write(second, record("user", "second prompt"))
	if got := prompts(); got[second] != "second prompt" {
		t.Errorf("a new session file is not listed: %v", got)
	}
	// The first one is removed.
	if err := os.Remove(filepath.Join(project, first+".jsonl")); err != nil {
		t.Fatal(err)
	}
	if got := prompts(); len(got) != 1 || got[second] == "" {
		t.Errorf("after removing a session file: %v", got)
	}
}
