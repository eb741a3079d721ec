package integrate

import (
	_ "embed"
	"path/filepath"

	piadapter "github.com/agentctl/agentctl/adapters/pi"
)

//go:embed agents/pi.js
var piExtension []byte

// pi is Pi's integration: an extension in the folder Pi 0.73 loads user
// extensions from (extensions/*.js in its agent folder:
// $PI_CODING_AGENT_DIR, else ~/.pi/agent), which reports session start,
// agent start and end, turn ends and tool calls; a tool call waits for a
// decision only when the user set AGENTCTL_PI_ASK_SECONDS.
func pi() Integration {
	return pluginFile{agent: "pi", at: func(env Env) string {
		return filepath.Join(piadapter.AgentDir(env.UserHome, env.getenv), "extensions", "agentctl.js")
	}, script: piExtension}
}
