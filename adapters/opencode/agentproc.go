package opencode

// IsAgentProcess says whether argv runs OpenCode: the service walks an
// integration's hook (its plugin's) up its parents to the first such
// process, the agent the report speaks for.
func (a *Adapter) IsAgentProcess(argv []string) bool { return isOpencode(argv) }
