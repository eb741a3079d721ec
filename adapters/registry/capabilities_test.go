package registry

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/openclaw"
)

// capabilities names the optional adapter capabilities (adapters/
// capabilities.go) a adapter implements.
func capabilities(a adapters.Adapter) []string {
	has := map[string]bool{}
	_, has["Launcher"] = a.(adapters.Launcher)
	_, has["NativeIDFinder"] = a.(adapters.NativeIDFinder)
	_, has["Stopper"] = a.(adapters.Stopper)
	_, has["TurnInterrupter"] = a.(adapters.TurnInterrupter)
	_, has["ChangeWatcher"] = a.(adapters.ChangeWatcher)
	_, has["NativeIDChecker"] = a.(adapters.NativeIDChecker)
	_, has["AssistantReader"] = a.(adapters.AssistantReader)
	_, has["OneReader"] = a.(adapters.OneReader)
	_, has["HookReader"] = a.(adapters.HookReader)
	_, has["Settler"] = a.(adapters.Settler)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(has)) {
		if has[name] {
			out = append(out, name)
		}
	}
	return out
}

// Every adapter of the registry implements exactly the capabilities this
// table states: gaining or losing one changes what the service does with
// its sessions (stop, peek, status of one id, events), so it must be a
// change of this table too, and of the adapter's `var _` checks.
func TestCapabilities(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"claude":   "AssistantReader HookReader Launcher OneReader",
		"codex":    "AssistantReader HookReader Launcher NativeIDFinder OneReader Stopper TurnInterrupter",
		"opencode": "HookReader Launcher NativeIDFinder OneReader",
		"pi":       "AssistantReader HookReader Launcher NativeIDFinder OneReader Settler",
		"pi-rust":  "AssistantReader HookReader Launcher NativeIDFinder OneReader Settler",
		"openclaw": "ChangeWatcher NativeIDChecker Stopper",
	}
	// A gateway configured, so the registry holds every adapter.
	getenv := func(k string) string {
		if k == openclaw.EnvURL {
			return "ws://127.0.0.1:1"
		}
		return ""
	}
	got := map[string]string{}
	for _, a := range Local(t.TempDir(), getenv, Options{}) {
		got[a.Name()] = strings.Join(capabilities(a), " ")
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("adapter %s (%s) has no row in this table", name, got[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			caps, ok := got[name]
			if !ok {
				t.Fatalf("the registry has no adapter %s", name)
			}
			if caps != want[name] {
				t.Errorf("%s implements %q, the table says %q", name, caps, want[name])
			}
		})
	}
}
