package codex

// IsAgentProcess says whether argv runs Codex (its TUI, an exec, or its
// app-server): the service walks an integration's hook up its parents to
// the first such process, the agent the report speaks for.
func (a *Adapter) IsAgentProcess(argv []string) bool { return isCodex(argv) }

// SharedProcess says whether argv is Codex's app-server daemon. Codex
// 0.169 runs its notify program from there, for the turns of every TUI of
// the store, and the first TUI that needed the daemon is its parent: a
// report's parentage names the daemon, never the TUI whose turn ended.
func (a *Adapter) SharedProcess(argv []string) bool { return isDaemon(argv) }
