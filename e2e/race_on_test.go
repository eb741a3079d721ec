//go:build race

package e2e

// raceBuild makes the agentctl binary under test a race-detector build when
// the tests themselves run with -race, so the service and the shims are
// checked too.
const raceBuild = true
