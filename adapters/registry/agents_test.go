package registry

import (
	"slices"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
)

// The names the CLI completes for launch are those of the adapters that
// launch agents, and no others.
func TestAgentsAreTheLaunchers(t *testing.T) {
	t.Parallel()
	var launchers []string
	for _, a := range Local(t.TempDir(), func(string) string { return "" }, Options{}) {
		if _, ok := a.(adapters.Launcher); ok {
			launchers = append(launchers, a.Name())
		}
	}
	slices.Sort(launchers)
	want := slices.Sorted(slices.Values(api.Agents()))
	if !slices.Equal(launchers, want) {
		t.Fatalf("launchers %q, api.Agents() %q", launchers, want)
	}
}
