package claude

import (
	"os"
	"slices"
	"testing"
)

func TestPermissionArgs(t *testing.T) {
	t.Parallel()
	root := os.Geteuid() == 0
	unattended := []string{"--dangerously-skip-permissions"}
	if root {
		unattended = []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
	}
	for _, tc := range []struct {
		name        string
		env         []string
		mode        string
		interactive bool
		args        []string
		want        []string
	}{
		{"headless default", nil, "", false, nil, unattended},
		{"headless in a sandbox", []string{"IS_SANDBOX=1"}, "", false, nil, []string{"--dangerously-skip-permissions"}},
		{"interactive default: the user's settings", nil, "", true, nil, nil},
		{"a mode", nil, "plan", false, nil, []string{"--permission-mode", "plan"}},
		{"a mode, interactive", nil, "acceptEdits", true, nil, []string{"--permission-mode", "acceptEdits"}},
		{"the caller's own flag", nil, "", false, []string{"--permission-mode", "plan"}, nil},
		{"the caller's own flag with =", nil, "", false, []string{"--allowedTools=Read"}, nil},
		{"other caller flags keep the default", nil, "", false, []string{"--max-turns", "3"}, unattended},
	} {
		got, err := permissionArgs(tc.env, tc.mode, tc.interactive, tc.args)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	_, err := permissionArgs(nil, "bypassPermissions", false, nil)
	if root && err == nil {
		t.Error("bypassPermissions as root outside a sandbox: accepted (claude refuses it)")
	}
	if _, err := permissionArgs([]string{"IS_SANDBOX=1"}, "bypassPermissions", false, nil); err != nil {
		t.Errorf("bypassPermissions in a sandbox: %v", err)
	}
}
