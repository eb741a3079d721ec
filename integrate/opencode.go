package integrate

import (
	_ "embed"
	"path/filepath"
)

//go:embed agents/opencode.js
var openCodePlugin []byte

// opencode is OpenCode's integration: a plugin in the folder OpenCode
// 1.18 loads user plugins from (~/.config/opencode/{plugin,plugins}/*.js),
// which reports session status, idle, errors, questions and permission
// requests, and gives OpenCode the answer to a permission decided through
// agentctl.
func opencode() Integration {
	return pluginFile{agent: "opencode", rel: filepath.Join(".config", "opencode", "plugin", "agentctl.js"), script: openCodePlugin}
}
