//go:build !gendocs

package main

import "github.com/spf13/cobra"

// buildCommands: none, outside a build for packaging (see gendocs.go).
func buildCommands(cli *cli) []*cobra.Command { return nil }
