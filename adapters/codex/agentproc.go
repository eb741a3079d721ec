package codex

// IsAgentProcess says whether argv runs Codex (its TUI, an exec, or its
// app-server): the service walks an integration's hook up its parents to
// the first such process, the agent the report speaks for.
func (a *Adapter) IsAgentProcess(argv []string) bool { return isCodex(argv) }
