package session

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/adapters/codex"
	"github.com/agentctl/agentctl/adapters/pi"
	synthclaude "github.com/agentctl/agentctl/internal/synth/claude"
	synthcodex "github.com/agentctl/agentctl/internal/synth/codex"
	synthpi "github.com/agentctl/agentctl/internal/synth/pi"
)

// An adapter's LastAssistant (which reads back only as far as the
// assistant's messages go) says what the whole transcript says of its last
// n assistant messages, for every session of a generated store.
func TestLastAssistantMatchesTheWholeTranscript(t *testing.T) {
	for _, tc := range []struct {
		name     string
		generate func(home string) error
		adapter  func(adapters.Env) adapters.Adapter
	}{
		{"claude", func(home string) error { return synthclaude.GenerateStore(home, 12, 7) }, func(e adapters.Env) adapters.Adapter { return claude.New(e) }},
		{"codex", func(home string) error { return synthcodex.GenerateStore(filepath.Join(home, ".codex"), 12, 7) }, func(e adapters.Env) adapters.Adapter { return codex.New(e) }},
		{"pi", func(home string) error { return synthpi.GenerateStore(home, 12, 7) }, func(e adapters.Env) adapters.Adapter { return pi.New(e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if err := tc.generate(home); err != nil {
				t.Fatal(err)
			}
			a := tc.adapter(adapters.Env{Home: home, Getenv: func(string) string { return "" }})
			ar, ok := a.(adapters.AssistantReader)
			if !ok {
				t.Fatalf("%s is no AssistantReader", tc.name)
			}
			ctx := context.Background()
			found, err := a.Discover(ctx)
			if err != nil || len(found) == 0 {
				t.Fatalf("discover: %d sessions, %v", len(found), err)
			}
			total := 0
			for _, ns := range found {
				all, err := a.Transcript(ctx, ns.NativeID, 0)
				if err != nil {
					t.Fatal(err)
				}
				whole := assistantOf(all)
				total += len(whole)
				for _, n := range []int{1, 3, 1000} {
					got, err := ar.LastAssistant(ctx, ns.NativeID, n)
					if err != nil {
						t.Fatal(err)
					}
					mine := assistantOf(got)
					want := whole[max(len(whole)-n, 0):]
					if len(mine) < len(want) {
						t.Fatalf("%s n=%d: %d assistant messages, want %d", ns.NativeID, n, len(mine), len(want))
					}
					mine = mine[len(mine)-len(want):]
					for i := range want {
						if mine[i].Text != want[i].Text {
							t.Fatalf("%s n=%d: message %d is %.40q, want %.40q", ns.NativeID, n, i, mine[i].Text, want[i].Text)
						}
					}
				}
			}
			if total == 0 {
				t.Fatal("the generated store holds no assistant message")
			}
		})
	}
}
