package integrate

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The OpenCode plugin, run by node as OpenCode runs it, over a subagent's
// events: the subagent's own status never reaches agentctl (the process
// stays tied to the session the person started, busy while the subagent
// works), and what the subagent asks is reported as the person's
// session's, with the subagent's permission id to answer it by.
func TestOpenCodePluginSubagent(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs it with the agents)")
	}
	dir := t.TempDir()
	reports := filepath.Join(dir, "reports")
	// The hook's argv ends "opencode --integration --event E".
	bin := executable(t, dir, "agentctl", `while [ "$1" != --event ]; do shift; done
printf '%s\t' "$2" >> "`+reports+`"; cat >> "`+reports+`"; echo >> "`+reports+`"`+"\n")
	script, err := opencode().(pluginFile).render(testEnv(t, bin))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentctl.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	driver := `import { AgentctlPlugin } from "./agentctl.mjs";
const p = await AgentctlPlugin({ directory: "/proj", client: {} });
const ev = (type, properties) => p.event({ event: { id: "e", type, properties } });
await ev("session.created", { sessionID: "ses_root", info: { id: "ses_root" } });
await ev("session.status", { sessionID: "ses_root", status: { type: "busy" } });
await ev("session.created", { sessionID: "ses_child", info: { id: "ses_child", parentID: "ses_root" } });
await ev("session.created", { sessionID: "ses_grandchild", info: { id: "ses_grandchild", parentID: "ses_child" } });
await ev("session.status", { sessionID: "ses_child", status: { type: "busy" } });
await ev("permission.asked", { sessionID: "ses_grandchild", id: "per_1", permission: "bash", patterns: ["ls"] });
await ev("session.status", { sessionID: "ses_child", status: { type: "idle" } });
await ev("session.idle", { sessionID: "ses_child" });
await ev("session.idle", { sessionID: "ses_root" });
`
	if err := os.WriteFile(filepath.Join(dir, "driver.mjs"), []byte(driver), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "driver.mjs")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	b, err := os.ReadFile(reports)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		event, body, _ := strings.Cut(line, "\t")
		var r struct {
			Event struct {
				Properties struct {
					SessionID string `json:"sessionID"`
					ID        string `json:"id"`
				} `json:"properties"`
			} `json:"event"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("report %q: %v", line, err)
		}
		got = append(got, strings.TrimSpace(event+" "+r.Event.Properties.SessionID+" "+r.Event.Properties.ID))
	}
	want := []string{
		"session.created ses_root",
		"session.status ses_root",
		"permission.asked ses_root per_1",
		"session.idle ses_root",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reports:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
