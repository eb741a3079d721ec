package supervisor

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/openclaw"
	"github.com/agentctl/agentctl/adapters/registry"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/synth/claude"
	"github.com/agentctl/agentctl/internal/synth/codex"
	"github.com/agentctl/agentctl/internal/synth/opencode"
	"github.com/agentctl/agentctl/internal/synth/pi"
)

// keyedGateway stands in for an OpenClaw gateway: sessions keyed as the
// real gateway keys them, validated by the OpenClaw adapter's own rule, a
// run that an abort ends.
type keyedGateway struct {
	mu      sync.Mutex
	keys    []string
	running map[string]bool
}

func (g *keyedGateway) Name() string { return openclaw.Name }

func (g *keyedGateway) ValidNativeID(id string) bool { return openclaw.ValidKey(id) }

func (g *keyedGateway) Discover(context.Context) ([]adapters.NativeSession, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []adapters.NativeSession
	for _, k := range g.keys {
		state := adapters.NativeDone
		if g.running[k] {
			state = adapters.NativeBusy
		}
		out = append(out, adapters.NativeSession{Adapter: openclaw.Name, NativeID: k, State: state, CreatedAt: time.Now()})
	}
	return out, nil
}

func (g *keyedGateway) Transcript(_ context.Context, key string, _ int) ([]adapters.Message, error) {
	return []adapters.Message{{Role: "assistant", Text: "answer of " + key}}, nil
}

func (g *keyedGateway) Stop(_ context.Context, key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.running[key] {
		return fmt.Errorf("stop %s: %w", key, adapters.ErrNotRunning)
	}
	g.running[key] = false
	return nil
}

// Every id list prints, of every adapter's real shape, is accepted by the
// commands that take an id, through the HTTP API (where ':' and the rest
// travel in the path), whole and as its handle; what no adapter's id can
// be is refused as invalid.
func TestEveryListedIDIsAccepted(t *testing.T) {
	userHome := t.TempDir()
	for _, gen := range []func() error{
		func() error { return claude.GenerateStore(userHome, 2, 1) },
		func() error { return codex.GenerateStore(filepath.Join(userHome, ".codex"), 2, 2) },
		func() error { return opencode.GenerateStore(filepath.Join(userHome, ".local", "share"), 2, 3) },
		func() error { return pi.GenerateStore(userHome, 2, 4) },
	} {
		if err := gen(); err != nil {
			t.Fatal(err)
		}
	}
	h := newHome(t)
	as := registry.Local(string(h), func(k string) string {
		if k == "HOME" {
			return userHome
		}
		return ""
	}, registry.Options{})
	gw := &keyedGateway{
		keys: []string{
			"agent:main:dashboard:7f3e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b",
			"agent:main:main",
			"agent:ops:whatsapp:dm:+15551234567",
			"hook:0b9d6c4e-2f1a-4c3b-8d7e-6a5f4e3d2c1b",
		},
		running: map[string]bool{"agent:main:dashboard:7f3e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b": true},
	}
	svc := startServiceWith(t, h, append(as, gw))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	list, err := svc.client.List(ctx, api.ListOptions{All: true, Since: 10 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Warnings) > 0 {
		t.Fatalf("list warned: %q", list.Warnings)
	}
	per := map[string]int{}
	for _, s := range list.Sessions {
		per[s.Adapter]++
	}
	for _, name := range []string{"claude", "codex", "opencode", "pi", openclaw.Name} {
		if per[name] == 0 {
			t.Fatalf("no %s session listed (%v)", name, per)
		}
	}
	for _, s := range list.Sessions {
		for _, handle := range []string{s.ID, s.Handle, strings.ToUpper(s.ID[:1]) + s.ID[1:]} {
			t.Run(s.Adapter+"/"+handle, func(t *testing.T) {
				got, err := svc.client.Get(ctx, handle)
				if err != nil || got.ID != s.ID {
					t.Fatalf("status %s = %s, %v; want %s", handle, got.ID, err, s.ID)
				}
				tr, err := svc.client.Transcript(ctx, handle, 1)
				if err != nil || tr.Session.ID != s.ID {
					t.Fatalf("peek %s = %s, %v; want %s", handle, tr.Session.ID, err, s.ID)
				}
				// Stop of what has ended answers with its state.
				if !gw.running[s.ID] {
					if st, err := svc.client.Stop(ctx, handle, api.StopRequest{}); err != nil || st.ID != s.ID {
						t.Fatalf("stop %s = %s, %v", handle, st.ID, err)
					}
				}
			})
		}
	}

	// A gateway run is stopped by its key.
	key := gw.keys[0]
	st, err := svc.client.Stop(ctx, key, api.StopRequest{})
	if err != nil || st.ID != key || st.Status != api.StatusEnded {
		t.Fatalf("stop %s = %+v, %v", key, st, err)
	}
	// A prefix of a key, cut after a ':', names it too.
	if got, err := svc.client.Get(ctx, "agent:main:dash"); err != nil || got.ID != key {
		t.Fatalf("status of a key prefix = %s, %v", got.ID, err)
	}

	for _, bad := range []string{"../../etc", "agent:main:../x", "agent:main:a b", "agent:.hidden", "a\x1b[2J", ":" + strings.Repeat("x", 600)} {
		if _, err := svc.client.Get(ctx, bad); api.CodeOf(err) != api.CodeInvalid {
			t.Errorf("status %q: %v, want %s", bad, err, api.CodeInvalid)
		}
	}
	// A well-formed key no session has is not found.
	if _, err := svc.client.Get(ctx, "agent:main:dashboard:00000000-0000-4000-8000-000000000000"); api.CodeOf(err) != api.CodeNotFound {
		t.Errorf("status of an unknown key: %v, want %s", err, api.CodeNotFound)
	}
}
