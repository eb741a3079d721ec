package integrate

// All is every agent's integration, one line each (each agent's in its
// own file).
func All() []Integration {
	return []Integration{
		Claude{},
		opencode(),
		pi(),
		codex(),
	}
}

// Lookup is the integration of agent, nil when it has none.
func Lookup(agent string) Integration {
	for _, i := range All() {
		if i.Agent() == agent {
			return i
		}
	}
	return nil
}
