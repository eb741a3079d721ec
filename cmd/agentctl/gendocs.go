//go:build gendocs

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// buildCommands are the commands of a build for packaging: gen-docs. They
// are left out of the binary people run because cobra/doc's man page
// writer (go-md2man, blackfriday) costs package init at every start.
func buildCommands(cli *cli) []*cobra.Command { return []*cobra.Command{newGenDocsCmd(cli)} }

// newGenDocsCmd writes the man pages and shell completions that
// distribution packages ship (make package runs it, from a build with
// -tags gendocs).
func newGenDocsCmd(cli *cli) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:    "gen-docs --out DIR",
		Short:  "Write man pages (DIR/man1) and shell completions (DIR/completions)",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{fmt.Errorf("gen-docs: --out DIR is required")}
			}
			root := cmd.Root()
			// No "auto generated on DATE" footer: the pages must be
			// reproducible.
			root.DisableAutoGenTag = true
			date := time.Now()
			if epoch := cli.getenv("SOURCE_DATE_EPOCH"); epoch != "" {
				sec, err := strconv.ParseInt(epoch, 10, 64)
				if err != nil {
					return usageError{fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds", epoch)}
				}
				date = time.Unix(sec, 0).UTC()
			}
			man := filepath.Join(out, "man1")
			if err := os.MkdirAll(man, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", man, err)
			}
			// No Title: each page is titled after its command
			// (AGENTCTL-LOGS). The footer names a release, or "dev" and
			// the commit between releases.
			header := &doc.GenManHeader{
				Section: "1",
				Source:  "agentctl " + shortVersion(),
				Manual:  "agentctl manual",
				Date:    &date,
			}
			if err := doc.GenManTree(root, header, man); err != nil {
				return fmt.Errorf("write man pages to %s: %w", man, err)
			}
			completions := map[string]func(*bytes.Buffer) error{
				"agentctl.bash": func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) },
				"_agentctl":     func(b *bytes.Buffer) error { return root.GenZshCompletion(b) },
				"agentctl.fish": func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) },
			}
			dir := filepath.Join(out, "completions")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", dir, err)
			}
			for name, gen := range completions {
				var b bytes.Buffer
				if err := gen(&b); err != nil {
					return fmt.Errorf("generate %s: %w", name, err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
					return fmt.Errorf("write %s: %w", name, err)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote man pages to %s and completions to %s\n", man, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write into")
	return cmd
}

// shortVersion is the version for a man page's footer: a release's tag, or
// "dev" and the commit for a build between releases.
func shortVersion() string {
	v := buildInfo()
	if pseudoCommit(v.Version) == "" && v.Version != "dev" {
		return v.Version
	}
	if v.Commit != "" {
		return "dev-" + v.Commit[:min(12, len(v.Commit))]
	}
	return "dev"
}
