package session

import (
	"maps"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// The detector counts the sessions started by hand that wait, by what for,
// as it last saw them: a launched one is not its count (the metrics count
// those from their records), and one that resumed, ended or left the view
// is no longer counted.
func TestTransitionsWaitingByHand(t *testing.T) {
	t.Parallel()
	waiting := func(id string, origin, forWhat string) api.Session {
		return api.Session{ID: id, Origin: origin, Status: api.StatusRunning, Activity: api.ActivityWaiting, WaitingFor: forWhat, Waiting: &api.Waiting{For: forWhat}}
	}
	busy := func(id string) api.Session {
		return api.Session{ID: id, Origin: api.OriginDiscovered, Status: api.StatusRunning, Activity: api.ActivityBusy}
	}
	for _, tc := range []struct {
		name  string
		views [][]api.Session
		want  map[string]int
	}{
		{"none", [][]api.Session{{busy("a")}}, map[string]int{}},
		{"by hand, by what for", [][]api.Session{{waiting("a", api.OriginDiscovered, api.WaitingInput), waiting("b", api.OriginDiscovered, api.WaitingPermission), waiting("c", api.OriginDiscovered, api.WaitingInput)}},
			map[string]int{api.WaitingInput: 2, api.WaitingPermission: 1}},
		{"a launched one is not counted here", [][]api.Session{{waiting("a", api.OriginLaunched, api.WaitingInput)}}, map[string]int{}},
		{"resumed", [][]api.Session{{waiting("a", api.OriginDiscovered, api.WaitingInput)}, {busy("a")}}, map[string]int{}},
		{"ended", [][]api.Session{{waiting("a", api.OriginDiscovered, api.WaitingInput)}, {{ID: "a", Origin: api.OriginDiscovered, Status: api.StatusEnded}}}, map[string]int{}},
		{"gone from the view", [][]api.Session{{waiting("a", api.OriginDiscovered, api.WaitingInput)}, {}}, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTransitions()
			for _, v := range tc.views {
				tr.compare(v)
			}
			if got := tr.waitingByHand(); !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
