package integrate

import (
	_ "embed"
	"path/filepath"
)

//go:embed agents/opencode.js
var openCodePlugin []byte

// opencode is OpenCode's integration: a plugin in the folder OpenCode
// 1.18 loads user plugins from ($XDG_CONFIG_HOME/opencode/{plugin,plugins}/*.js,
// ~/.config by default), which reports session status, idle, errors,
// questions and permission requests, and gives OpenCode the answer to a
// permission decided through agentctl. OPENCODE_CONFIG_DIR names a folder
// OpenCode loads plugins from as well as that one, not instead: the
// plugin stays in the user's.
func opencode() Integration {
	return pluginFile{agent: "opencode", at: openCodePluginPath, script: openCodePlugin}
}

// openCodePluginPath is where the plugin goes for the user of env.
func openCodePluginPath(env Env) string {
	config := env.getenv("XDG_CONFIG_HOME")
	if config == "" {
		config = filepath.Join(env.UserHome, ".config")
	}
	return filepath.Join(config, "opencode", "plugin", "agentctl.js")
}
