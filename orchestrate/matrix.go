package orchestrate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Matrix is a matrix file: one task, many members.
//
//	prompt: Fix the flaky test in ./store
//	cwd: ~/code/app            # optional; relative to the file's folder
//	base_branch: main          # optional (or baseBranch)
//	spec: docs/spec.md         # optional; added to the prompt
//	matrix:
//	  - adapter: claude
//	    model: [opus, sonnet]  # a list: one member per model
//	  - adapter: codex
//	    model: gpt-5.2-codex
//	  - adapter: [pi, opencode] # a list of adapters: crossed with the models
//	    model: fake/fake-model
//	    branch: try/mine       # optional, instead of try/<group>/<suffix>
//	    base_branch: develop   # optional, per entry
type Matrix struct {
	Prompt string
	// Cwd is absolute ("~" expanded, relative paths taken from the file's
	// folder); empty when the file does not say.
	Cwd        string
	BaseBranch string
	// Spec is the absolute path of a spec file to add to the prompt.
	Spec    string
	Entries []MatrixEntry
	// Warnings are keys accepted for compatibility but not acted on.
	Warnings []string
}

// MatrixEntry is one item of the matrix list.
type MatrixEntry struct {
	Line       int
	Adapters   []string
	Models     []string // empty: the agent's default model
	Branch     string
	BaseBranch string
}

// Members expands the entries: every adapter of an entry with every model of
// it, in file order.
func (m Matrix) Members() []Member {
	var out []Member
	for _, e := range m.Entries {
		models := e.Models
		if len(models) == 0 {
			models = []string{""}
		}
		for _, a := range e.Adapters {
			for _, mod := range models {
				out = append(out, Member{Adapter: a, Model: mod, Branch: e.Branch, Base: e.BaseBranch})
			}
		}
	}
	return out
}

// MatrixError is a problem in a matrix file, with where it is.
type MatrixError struct {
	Path string
	Line int // 0 when the whole file is concerned
	Col  int
	Msg  string
}

func (e *MatrixError) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

// LoadMatrix reads and parses a matrix file.
func LoadMatrix(path, home string) (Matrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Matrix{}, fmt.Errorf("read matrix file: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Matrix{}, fmt.Errorf("read matrix file: %w", err)
	}
	return ParseMatrix(path, filepath.Dir(abs), home, b)
}

// Compiled on first use: package init runs at every CLI start.
var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// ParseMatrix parses a matrix file's content. name is how errors refer to the
// file, dir is the folder relative paths in it start from, and home replaces
// a leading "~".
func ParseMatrix(name, dir, home string, data []byte) (Matrix, error) {
	fail := func(n *yaml.Node, format string, a ...any) error {
		e := &MatrixError{Path: name, Msg: fmt.Sprintf(format, a...)}
		if n != nil {
			e.Line, e.Col = n.Line, n.Column
		}
		return e
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return Matrix{}, fail(nil, "the file is empty; it needs a 'matrix:' list of adapters")
		}
		return Matrix{}, yamlSyntaxError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Matrix{}, fail(&extra, "a second YAML document; a matrix file holds one")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return Matrix{}, fail(root, "the top level must be a mapping with a 'matrix:' list, not %s", kindName(root))
	}
	var m Matrix
	var matrixNode *yaml.Node
	var snakeBase, camelBase *yaml.Node
	if err := noDuplicateKeys(root, fail); err != nil {
		return Matrix{}, err
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "prompt":
			s, err := scalarString(v, "prompt", fail)
			if err != nil {
				return Matrix{}, err
			}
			m.Prompt = s
		case "cwd":
			s, err := scalarString(v, "cwd", fail)
			if err != nil {
				return Matrix{}, err
			}
			m.Cwd = expandPath(s, dir, home)
		case "spec":
			s, err := scalarString(v, "spec", fail)
			if err != nil {
				return Matrix{}, err
			}
			m.Spec = expandPath(s, dir, home)
		case "base_branch":
			snakeBase = v
		case "baseBranch":
			camelBase = v
		case "hooks":
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s:%d: 'hooks' in a matrix file are not run; ignored", name, k.Line))
		case "matrix":
			matrixNode = v
		default:
			return Matrix{}, fail(k, "unknown key %q (known: prompt, cwd, spec, base_branch, matrix)", k.Value)
		}
	}
	base, err := eitherString(snakeBase, camelBase, "base_branch", fail)
	if err != nil {
		return Matrix{}, err
	}
	m.BaseBranch = base
	matrixNode = deref(matrixNode)
	if matrixNode == nil {
		return Matrix{}, fail(root, "no 'matrix:' list of adapters")
	}
	if matrixNode.Kind != yaml.SequenceNode {
		return Matrix{}, fail(matrixNode, "'matrix' must be a list of entries like '- adapter: claude', not %s", kindName(matrixNode))
	}
	if len(matrixNode.Content) == 0 {
		return Matrix{}, fail(matrixNode, "'matrix' is empty; list at least one adapter")
	}
	for i, en := range matrixNode.Content {
		e, err := parseEntry(en, i+1, fail)
		if err != nil {
			return Matrix{}, err
		}
		m.Entries = append(m.Entries, e)
	}
	return m, nil
}

// yamlSyntaxError turns the YAML decoder's message into one with a file and
// line. The decoder counts some lines from 0 and leaves out a line 1, so
// both are put right here.
func yamlSyntaxError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if strings.HasPrefix(msg, "did not find expected") {
			// A parser error: counted from 0, and pointing at the block the
			// problem is in when the parser knows it.
			line++
		}
	} else {
		for _, p := range []string{"did not find expected", "could not find expected", "found ", "mapping values are not allowed", "block sequence entries are not allowed"} {
			if strings.HasPrefix(msg, p) {
				line = 1
			}
		}
	}
	if strings.HasPrefix(msg, "did not find expected") {
		msg += " (on this line or in the block that starts on it; check the indentation)"
	}
	return &MatrixError{Path: name, Line: line, Msg: msg}
}

type failFunc func(n *yaml.Node, format string, a ...any) error

func parseEntry(n *yaml.Node, idx int, fail failFunc) (MatrixEntry, error) {
	n = deref(n)
	e := MatrixEntry{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return e, fail(n, "matrix entry %d must be a mapping like 'adapter: claude', not %s", idx, kindName(n))
	}
	if err := noDuplicateKeys(n, fail); err != nil {
		return e, err
	}
	var snakeBase, camelBase *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "adapter":
			e.Adapters, err = stringOrList(v, "adapter", fail)
		case "model":
			e.Models, err = stringOrList(v, "model", fail)
		case "branch":
			e.Branch, err = scalarString(v, "branch", fail)
		case "base_branch":
			snakeBase = v
		case "baseBranch":
			camelBase = v
		default:
			err = fail(k, "matrix entry %d: unknown key %q (known: adapter, model, branch, base_branch)", idx, k.Value)
		}
		if err != nil {
			return e, err
		}
	}
	base, err := eitherString(snakeBase, camelBase, "base_branch", fail)
	if err != nil {
		return e, err
	}
	e.BaseBranch = base
	if len(e.Adapters) == 0 {
		return e, fail(n, "matrix entry %d has no adapter", idx)
	}
	if e.Branch != "" && len(e.Adapters)*max(1, len(e.Models)) > 1 {
		return e, fail(n, "matrix entry %d names one branch %q for several members; a branch can be checked out in one worktree only", idx, e.Branch)
	}
	return e, nil
}

// noDuplicateKeys refuses a mapping that names a key twice: YAML decoders
// disagree on which one wins, so neither may.
func noDuplicateKeys(n *yaml.Node, fail failFunc) error {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if line, dup := first[k.Value]; dup {
			return fail(k, "duplicate key %q (first on line %d)", k.Value, line)
		}
		first[k.Value] = k.Line
	}
	return nil
}

// scalarString reads a string value; numbers and booleans are refused so a
// model named 4 or yes is written as "4" or "yes" on purpose.
func scalarString(v *yaml.Node, key string, fail failFunc) (string, error) {
	v = deref(v)
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		return "", fail(v, "%s must be a string, not %s", key, kindName(v))
	}
	return strings.TrimSpace(v.Value), nil
}

// stringOrList reads a string or a non-empty list of strings.
func stringOrList(v *yaml.Node, key string, fail failFunc) ([]string, error) {
	v = deref(v)
	if v.Kind == yaml.SequenceNode {
		if len(v.Content) == 0 {
			return nil, fail(v, "%s is an empty list", key)
		}
		out := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			s, err := scalarString(item, key, fail)
			if err != nil {
				return nil, err
			}
			if s == "" {
				return nil, fail(item, "%s list has an empty item", key)
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalarString(v, key, fail)
	if err != nil {
		return nil, fail(v, "%s must be a string or a list of strings, not %s", key, kindName(v))
	}
	if s == "" {
		return nil, nil
	}
	return []string{s}, nil
}

// eitherString reads base_branch or its camelCase spelling; giving both with
// different values is an error rather than a silent choice.
func eitherString(snake, camel *yaml.Node, key string, fail failFunc) (string, error) {
	var a, b string
	var err error
	if snake != nil {
		if a, err = scalarString(snake, key, fail); err != nil {
			return "", err
		}
	}
	if camel != nil {
		if b, err = scalarString(camel, "baseBranch", fail); err != nil {
			return "", err
		}
	}
	if snake != nil && camel != nil && a != b {
		return "", fail(camel, "both base_branch (%q, line %d) and baseBranch (%q) are given; keep one", a, snake.Line, b)
	}
	if a != "" {
		return a, nil
	}
	return b, nil
}

// deref follows a YAML alias (*name) to the node it refers to.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float":
			return "a number (" + n.Value + "; quote it)"
		case "!!bool":
			return "a boolean (" + n.Value + "; quote it)"
		case "!!null":
			return "empty"
		}
		return "a string"
	}
	return "empty"
}

// expandPath turns "~/x" into home/x and a relative path into dir/path.
func expandPath(p, dir, home string) string {
	switch {
	case p == "":
		return ""
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}
