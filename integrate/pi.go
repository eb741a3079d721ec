package integrate

import (
	_ "embed"
	"path/filepath"
)

//go:embed agents/pi.js
var piExtension []byte

// pi is Pi's integration: an extension in the folder Pi 0.73 loads user
// extensions from (~/.pi/agent/extensions/*.js), which reports session
// start, agent start and end, turn ends and tool calls; a tool call waits
// for a decision only when the user set AGENTCTL_PI_ASK_SECONDS.
func pi() Integration {
	return pluginFile{agent: "pi", rel: filepath.Join(".pi", "agent", "extensions", "agentctl.js"), script: piExtension}
}
