package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// hookPayload is a Claude Code PreToolUse hook input, as the real CLI sends
// it (shortened paths).
const hookPayload = `{"session_id":"4680c316-cef4-4d1f-b2f8-a9974c05cd6f","transcript_path":"/tmp/p/.claude/projects/-tmp-p/4680c316-cef4-4d1f-b2f8-a9974c05cd6f.jsonl","cwd":"/tmp/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hello > hello.txt","timeout":600000,"description":"echo"},"tool_use_id":"toolu_fake_0c70"}`

// measureHook times `agentctl hook claude` as Claude Code runs it: a new
// process reads the hook's JSON on stdin and reports it over the socket,
// with the agent waiting. Budget: 20 ms median.
func measureHook(ctx context.Context, o options, c *client.Client, homeDir string, env []string, base time.Duration) (coreRow, error) {
	cwd, _ := os.Getwd()
	s, err := c.Launch(ctx, api.RunRequest{Command: []string{"sleep", "600"}, Cwd: cwd, Env: os.Environ()})
	if err != nil {
		return coreRow{}, err
	}
	defer c.Stop(ctx, s.ID, api.StopRequest{Force: true})
	var ds []time.Duration
	for i := 0; i < o.runs*8; i++ {
		cmd := exec.CommandContext(ctx, o.bin, "hook", "--home", homeDir, "claude", "--event", "PreToolUse")
		cmd.Env = append(env, home.SessionEnv+"="+s.ID)
		cmd.Stdin = bytes.NewReader([]byte(hookPayload))
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return coreRow{}, fmt.Errorf("agentctl hook: %w: %s", err, errOut.String())
		}
		ds = append(ds, time.Since(t0))
		if errOut.Len() > 0 {
			return coreRow{}, fmt.Errorf("agentctl hook reported a failure: %s", errOut.String())
		}
	}
	slices.Sort(ds)
	got, err := c.Get(ctx, s.ID)
	if err != nil {
		return coreRow{}, err
	}
	if got.ActivitySource != api.SourceHook || got.Activity != api.ActivityBusy {
		return coreRow{}, fmt.Errorf("after the hook reports the session is %q from %q, want busy from the hook", got.Activity, got.ActivitySource)
	}
	return coreRow{what: "agentctl hook claude (the agent waits; budget 20 ms)", baseline: "fork/exec true", got: ds[len(ds)/2], base: base}, nil
}
