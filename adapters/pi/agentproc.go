package pi

// IsAgentProcess says whether argv runs this adapter's agent (Pi, or
// pi-rust for its adapter): the service walks an integration's hook (its
// extension's) up its parents to the first such process.
func (a *Adapter) IsAgentProcess(argv []string) bool {
	isPi, rust := piKind(argv)
	return isPi && rust == (a.name == NamePiRust)
}
