package codex

import (
	"slices"
	"testing"
)

func TestPermissionArgs(t *testing.T) {
	t.Parallel()
	bypass := []string{"--dangerously-bypass-approvals-and-sandbox"}
	for _, tc := range []struct {
		mode        string
		interactive bool
		args        []string
		want        []string
	}{
		{"", false, nil, bypass},
		{"", true, nil, nil},
		{"default", false, nil, nil},
		{"plan", false, nil, []string{"--sandbox", "read-only"}},
		{"acceptEdits", false, nil, []string{"--sandbox", "workspace-write"}},
		{"acceptEdits", true, nil, []string{"--sandbox", "workspace-write", "--ask-for-approval", "on-request"}},
		{"bypassPermissions", true, nil, bypass},
		{"", false, []string{"-s", "read-only"}, nil},
		{"", false, []string{"--sandbox=read-only"}, nil},
		{"", false, []string{"--json"}, bypass},
	} {
		got, err := permissionArgs(tc.mode, tc.interactive, tc.args)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("permissionArgs(%q, %v, %q) = %q, %v; want %q", tc.mode, tc.interactive, tc.args, got, err, tc.want)
		}
	}
	if _, err := permissionArgs("yolo", false, nil); err == nil {
		t.Error("an unknown mode accepted")
	}
}
