package session

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
)

// TestStoreEndsAMissedBusy: first-hand evidence outranks the store's,
// except a busy whose end the store recorded after it (the event saying
// the turn ended was missed); an older store record, a store that says
// busy, or other evidence than busy stand as they were.
func TestStoreEndsAMissedBusy(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 27, 5, 12, 37, 0, time.UTC)
	for _, tt := range []struct {
		name          string
		activity      string
		waitingFor    string
		source        string
		state         adapters.NativeState
		updated       time.Time
		want, wantSrc string
		wantSince     time.Time
	}{
		{"busy, the store idle since", api.ActivityBusy, "", api.SourceNative, adapters.NativeIdle, since.Add(48 * time.Second), api.ActivityIdle, api.SourceNative, since.Add(48 * time.Second)},
		{"busy from a hook, the store idle since", api.ActivityBusy, "", api.SourceHook, adapters.NativeIdle, since.Add(time.Second), api.ActivityIdle, api.SourceNative, since.Add(time.Second)},
		{"busy, the store idle before it", api.ActivityBusy, "", api.SourceHook, adapters.NativeIdle, since.Add(-time.Second), api.ActivityBusy, api.SourceHook, since},
		{"busy, the store busy", api.ActivityBusy, "", api.SourceHook, adapters.NativeBusy, since.Add(time.Minute), api.ActivityBusy, api.SourceHook, since},
		{"waiting for a permission, the store idle since", api.ActivityWaiting, api.WaitingPermission, api.SourceHook, adapters.NativeIdle, since.Add(time.Minute), api.ActivityWaiting, api.SourceHook, since},
		{"waiting for input, the store idle since", api.ActivityWaiting, api.WaitingInput, api.SourceNative, adapters.NativeIdle, since.Add(time.Minute), api.ActivityWaiting, api.SourceNative, since},
		{"idle, the store busy since", api.ActivityIdle, "", api.SourceHook, adapters.NativeBusy, since.Add(time.Minute), api.ActivityIdle, api.SourceHook, since},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at := since
			s := api.Session{Status: api.StatusRunning, Activity: tt.activity, ActivitySource: tt.source, ActivitySince: &at, WaitingFor: tt.waitingFor}
			enrich(&s, &adapters.NativeSession{State: tt.state, UpdatedAt: tt.updated})
			if s.Activity != tt.want || s.ActivitySource != tt.wantSrc || s.ActivitySince == nil || !s.ActivitySince.Equal(tt.wantSince) {
				t.Errorf("activity %q from %q since %v, want %q from %q since %v", s.Activity, s.ActivitySource, s.ActivitySince, tt.want, tt.wantSrc, tt.wantSince)
			}
		})
	}
}
