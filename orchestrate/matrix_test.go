package orchestrate

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseMatrix(t *testing.T) {
	src := `# a comparison
prompt: Fix the flaky test
cwd: ~/code/app
baseBranch: develop
spec: docs/spec.md
matrix:
  - adapter: claude
    model: [opus, sonnet]
  - adapter: codex
    model: gpt-5.2-codex
    base_branch: main
  - adapter: [pi, opencode]
    model:
      - fake/one
      - fake/two
  - adapter: pi-rust
    branch: try/mine
`
	m, err := ParseMatrix("m.yaml", "/files", "/home/u", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if m.Prompt != "Fix the flaky test" || m.Cwd != "/home/u/code/app" || m.BaseBranch != "develop" || m.Spec != "/files/docs/spec.md" {
		t.Errorf("top level = %+v", m)
	}
	want := []Member{
		{Adapter: "claude", Model: "opus"},
		{Adapter: "claude", Model: "sonnet"},
		{Adapter: "codex", Model: "gpt-5.2-codex", Base: "main"},
		{Adapter: "pi", Model: "fake/one"},
		{Adapter: "pi", Model: "fake/two"},
		{Adapter: "opencode", Model: "fake/one"},
		{Adapter: "opencode", Model: "fake/two"},
		{Adapter: "pi-rust", Branch: "try/mine"},
	}
	if got := m.Members(); !reflect.DeepEqual(got, want) {
		t.Errorf("members:\n got %+v\nwant %+v", got, want)
	}
	if m.Entries[2].Line != 12 {
		t.Errorf("entry 3 line = %d, want 12", m.Entries[2].Line)
	}
}

func TestParseMatrixOldFormat(t *testing.T) {
	// The tool agentctl replaces wrote these: relative cwd, hooks (kept
	// for compatibility, not run), snake_case winning when both agree.
	src := "cwd: repo\nhooks:\n  on_create: ./setup.sh\nbase_branch: main\nbaseBranch: main\nmatrix:\n  - adapter: claude-code\n    model: null\n  - adapter: codex\n    baseBranch: dev\n"
	m, err := ParseMatrix("old.yaml", "/files", "/home/u", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if m.Cwd != "/files/repo" || m.BaseBranch != "main" {
		t.Errorf("cwd, base = %q, %q", m.Cwd, m.BaseBranch)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "old.yaml:2: 'hooks'") {
		t.Errorf("warnings = %q", m.Warnings)
	}
	want := []Member{{Adapter: "claude-code"}, {Adapter: "codex", Base: "dev"}}
	if got := m.Members(); !reflect.DeepEqual(got, want) {
		t.Errorf("members = %+v, want %+v", got, want)
	}
}

func TestParseMatrixAliases(t *testing.T) {
	src := "models: &m [a, b]\nmatrix:\n  - adapter: pi\n    model: *m\n"
	_, err := ParseMatrix("a.yaml", "/", "/h", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `a.yaml:1:1: unknown key "models"`) {
		t.Fatalf("err = %v", err)
	}
	src = "matrix:\n  - adapter: pi\n    model: &m [a, b]\n  - adapter: opencode\n    model: *m\n"
	m, err := ParseMatrix("a.yaml", "/", "/h", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Members()); n != 4 {
		t.Errorf("%d members, want 4", n)
	}
}

func TestParseMatrixErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty file", "", "m.yaml: the file is empty"},
		{"only a comment", "# nothing\n", "m.yaml: the file is empty"},
		{"syntax: bad indentation", "matrix:\n  - adapter: claude\n   model: x\n", "m.yaml:2: did not find expected '-' indicator (on this line or in the block"},
		{"syntax: unclosed list", "prompt: hi\nmatrix: [\n  {adapter: x}\n", "m.yaml:2: did not find expected"},
		{"syntax: problem line", "x: 1\ny: 2\nmatrix:\n  - adapter: a\n  - adapter: b\n - adapter: c\n", "m.yaml:6: did not find expected key"},
		{"syntax: mapping in a value", "prompt: a: b\nmatrix:\n  - adapter: x\n", "m.yaml:1: mapping values are not allowed"},
		{"duplicate key", "matrix:\n  - adapter: x\nprompt: a\nmatrix:\n  - adapter: y\n", `m.yaml:4:1: duplicate key "matrix" (first on line 1)`},
		{"duplicate entry key", "matrix:\n  - adapter: x\n    model: a\n    model: b\n", `m.yaml:4:5: duplicate key "model" (first on line 3)`},
		{"tab indentation", "matrix:\n\t- adapter: claude\n", "m.yaml:2: "},
		{"top level is a list", "- adapter: claude\n", "m.yaml:1:1: the top level must be a mapping"},
		{"no matrix", "prompt: hi\n", "m.yaml:1:1: no 'matrix:' list"},
		{"matrix not a list", "prompt: hi\nmatrix:\n  adapter: claude\n", "m.yaml:3:3: 'matrix' must be a list"},
		{"empty matrix", "matrix: []\n", "m.yaml:1:9: 'matrix' is empty"},
		{"entry without adapter", "matrix:\n  - adapter: claude\n  - model: opus\n", "m.yaml:3:5: matrix entry 2 has no adapter"},
		{"entry not a mapping", "matrix:\n  - claude\n", "m.yaml:2:5: matrix entry 1 must be a mapping"},
		{"unknown entry key", "matrix:\n  - adapter: claude\n    modle: opus\n", `m.yaml:3:5: matrix entry 1: unknown key "modle"`},
		{"unknown top key", "promt: hi\nmatrix:\n  - adapter: x\n", `m.yaml:1:1: unknown key "promt"`},
		{"prompt not a string", "prompt: [a, b]\nmatrix:\n  - adapter: x\n", "m.yaml:1:9: prompt must be a string, not a list"},
		{"model is a number", "matrix:\n  - adapter: pi\n    model: 4\n", "m.yaml:3:12: model must be a string or a list of strings, not a number (4; quote it)"},
		{"empty model list", "matrix:\n  - adapter: pi\n    model: []\n", "m.yaml:3:12: model is an empty list"},
		{"empty item in a list", "matrix:\n  - adapter: pi\n    model: [a, '']\n", "m.yaml:3:16: model list has an empty item"},
		{"adapter is a mapping", "matrix:\n  - adapter: {name: pi}\n", "m.yaml:2:14: adapter must be a string or a list of strings, not a mapping"},
		{"one branch for two members", "matrix:\n  - adapter: pi\n    model: [a, b]\n    branch: mine\n", `m.yaml:2:5: matrix entry 1 names one branch "mine" for several members`},
		{"both base spellings differ", "base_branch: main\nbaseBranch: dev\nmatrix:\n  - adapter: x\n", "m.yaml:2:13: both base_branch (\"main\", line 1) and baseBranch (\"dev\") are given"},
		{"two documents", "matrix:\n  - adapter: x\n---\nmatrix: []\n", "m.yaml:3:1: a second YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMatrix("m.yaml", "/d", "/h", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %q\n  want prefix %q", err, tt.want)
			}
			var me *MatrixError
			if !errors.As(err, &me) {
				t.Errorf("error is %T, want *MatrixError", err)
			}
		})
	}
}

func TestLoadMatrix(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(p, []byte("cwd: .\nmatrix:\n  - adapter: pi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMatrix(p, "/h")
	if err != nil || m.Cwd != dir {
		t.Fatalf("LoadMatrix = %+v, %v; want cwd %s", m, err, dir)
	}
	if _, err := LoadMatrix(filepath.Join(dir, "missing.yaml"), "/h"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}
