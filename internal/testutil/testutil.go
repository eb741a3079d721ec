// Package testutil holds the rigs tests share (agenttest: the real agent
// CLIs tests drive). Only _test.go files import what is under it:
// TestOnlyTestsImportTestutil checks that no binary links a test rig.
package testutil
