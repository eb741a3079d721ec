package integrate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/text"
)

// codexIntegration is Codex's: its own hooks (UserPromptSubmit,
// PermissionRequest, PostToolUse, Stop) in
// $CODEX_HOME/hooks.json, trusted in config.toml, and its `notify`
// program, which Codex runs at the end of each turn with the turn's JSON
// as its last argument, and which needs no trust (it reports the end of a
// turn should the user turn hooks off). The top-level `notify` key of
// config.toml is edited as lines, so comments and formatting stay; a
// notify program the user had is kept, run by agentctl's entry after it
// reported.
type codexIntegration struct{}

// codex is Codex's integration.
func codex() Integration { return codexIntegration{} }

// codexHookBound is how long, in seconds, the notify entry lets the hook
// run.
const codexHookBound = "5"

// codexNotifyMark opens the script of agentctl's notify entry: what tells
// the entry apart from a user's program.
const codexNotifyMark = ": agentctl-notify;"

func (codexIntegration) Agent() string { return "codex" }

func codexConfig(env Env) string { return filepath.Join(codexHome(env), "config.toml") }

// codexEntry is agentctl's notify argv: a /bin/sh script (Codex gives the
// JSON as an argument; the hook reads it on stdin) whose $0 is the
// agentctl binary, then the user's notify argv, which the script runs
// after reporting, with the JSON as its last argument as Codex would.
func codexEntry(env Env, user []string) ([]string, error) {
	if len(env.Hook) == 0 || !filepath.IsAbs(env.Hook[0]) {
		return nil, fmt.Errorf("install the codex integration: the hook command %q is not an absolute path", env.Hook)
	}
	hook := `"$0"`
	if rest := env.Hook[1:]; len(rest) > 0 {
		hook += " " + text.ShellLine(rest)
	}
	// The hook runs as the shell's child (the service proves the agent by
	// parentage) and is killed after codexHookBound: a broken binary must
	// not hold up the user's program, nor stay.
	script := codexNotifyMark + ` for j; do :; done; printf '%s' "$j" | ` + hook +
		` codex --integration --event agent-turn-complete >/dev/null 2>&1 & h=$!; (sleep ` + codexHookBound + `; kill -9 $h) >/dev/null 2>&1 & w=$!; wait $h 2>/dev/null; kill $w 2>/dev/null; [ "$#" -gt 1 ] && exec "$@"; exit 0`
	return append([]string{"/bin/sh", "-c", script, env.Hook[0]}, user...), nil
}

// userNotify is the user's notify argv inside agentctl's entry, and
// whether argv is agentctl's entry at all.
func userNotify(argv []string) ([]string, bool) {
	if len(argv) >= 4 && argv[0] == "/bin/sh" && argv[1] == "-c" && strings.HasPrefix(argv[2], codexNotifyMark) {
		return argv[4:], true
	}
	return argv, false
}

func (c codexIntegration) Install(ctx context.Context, env Env) (Change, error) {
	if err := ctx.Err(); err != nil {
		return Change{}, err
	}
	if _, err := codexEntry(env, nil); err != nil {
		return Change{}, err
	}
	hooksPath := codexHooksFile(env)
	var hooksJSON []byte
	hooksCh, err := EditFile(env, c.Agent(), hooksPath, func(old []byte) ([]byte, error) {
		b, err := addCodexHooks(old, env)
		hooksJSON = b
		return b, err
	})
	if err != nil {
		return Change{}, err
	}
	trusts, _, err := codexTrusts(hooksJSON, codexKeyPath(env))
	if err != nil {
		return Change{}, fmt.Errorf("read %s: %w", hooksPath, err)
	}
	cfgCh, err := EditFile(env, c.Agent(), codexConfig(env), func(old []byte) ([]byte, error) {
		n, err := findNotify(old)
		if err != nil {
			return nil, err
		}
		var user []string
		if n.found {
			user, _ = userNotify(n.argv)
		}
		entry, err := codexEntry(env, user)
		if err != nil {
			return nil, err
		}
		line, err := notifyLine(entry)
		if err != nil {
			return nil, err
		}
		return withTrusts(n.replace(old, line), trusts, ourCodexHashes(env))
	})
	return mergeChanges(cfgCh, hooksCh), err
}

// mergeChanges is what two edits did.
func mergeChanges(a, b Change) Change {
	return Change{Files: append(a.Files, b.Files...), Backups: append(a.Backups, b.Backups...), Notes: append(a.Notes, b.Notes...)}
}

func (c codexIntegration) Remove(ctx context.Context, env Env) (Change, error) {
	if err := ctx.Err(); err != nil {
		return Change{}, err
	}
	// The trust entries of agentctl's hooks, where they are now.
	keys := map[string]bool{}
	if cur, existed, _, err := readConfig(codexHooksFile(env)); err == nil && existed {
		if trusts, _, err := codexTrusts(cur, codexKeyPath(env)); err == nil {
			for _, t := range trusts {
				keys[t.key] = true
			}
		}
	}
	hashes := ourCodexHashes(env)
	cfgCh, err := RestoreFile(env, c.Agent(), codexConfig(env), func(cur []byte) ([]byte, error) {
		cur = withoutTrusts(cur, keys, hashes)
		n, err := findNotify(cur)
		if err != nil || !n.found {
			return cur, err
		}
		user, ours := userNotify(n.argv)
		if !ours {
			return cur, nil
		}
		if len(user) == 0 {
			return n.replace(cur, ""), nil
		}
		line, err := notifyLine(user)
		if err != nil {
			return nil, err
		}
		return n.replace(cur, line), nil
	})
	if err != nil {
		return cfgCh, err
	}
	hooksCh, err := RestoreFile(env, c.Agent(), codexHooksFile(env), removeCodexHooks)
	return mergeChanges(cfgCh, hooksCh), err
}

func (c codexIntegration) Status(ctx context.Context, env Env) (State, error) {
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	path, hooksPath := codexConfig(env), codexHooksFile(env)
	files := []string{path, hooksPath}
	notify, err := codexNotifyStatus(path)
	if err != nil {
		return State{Files: files}, err
	}
	var missing []string
	hooks, existed, _, err := readConfig(hooksPath)
	if err != nil {
		return State{Files: files}, err
	}
	found := map[string]bool{}
	if existed {
		if _, found, err = codexTrusts(hooks, codexKeyPath(env)); err != nil {
			return State{Files: files, Detail: fmt.Sprintf("%s: %v", hooksPath, err)}, nil
		}
	}
	for _, ev := range codexHookEvents {
		if !found[ev.name] {
			missing = append(missing, ev.name)
		}
	}
	st := State{Files: files, Installed: notify.Installed || len(found) > 0, Detail: notify.Detail}
	switch {
	case !st.Installed:
	case !notify.Installed:
		st.Detail = "installed in part: no notify entry in " + path + " (agentctl integrate codex adds it)"
	case len(missing) > 0:
		st.Detail = "installed in part: no hook for " + strings.Join(missing, ", ") + " in " + hooksPath + " (agentctl integrate codex adds them)"
	}
	return st, nil
}

// codexNotifyStatus says whether config.toml at path runs agentctl's
// notify entry.
func codexNotifyStatus(path string) (State, error) {
	cur, existed, _, err := readConfig(path)
	if err != nil || !existed {
		return State{}, err
	}
	n, err := findNotify(cur)
	if err != nil {
		return State{Detail: err.Error()}, nil
	}
	if !n.found {
		return State{}, nil
	}
	user, ours := userNotify(n.argv)
	if !ours {
		return State{Detail: "notify runs " + text.ShellLine(n.argv) + ", not agentctl"}, nil
	}
	st := State{Installed: true, Detail: binaryProblem(n.argv[3])}
	if len(user) > 0 && st.Detail == "" {
		st.Detail = "then runs the notify program that was there: " + text.ShellLine(user)
	}
	return st, nil
}

// notifyLine is a `notify = [...]` line.
func notifyLine(argv []string) (string, error) {
	arr, err := jsonArray(argv)
	if err != nil {
		return "", err
	}
	// JSON's strings and their escapes are TOML basic strings.
	return "notify = " + arr + "\n", nil
}

// notifyKey is where config.toml's top-level notify key is: the bytes
// [start, end) from its line's start to the end of its value's last
// line, or, when there is none, where one goes (before the first table).
type notifyKey struct {
	found      bool
	start, end int
	argv       []string
}

// replace puts line in place of the key (or where one goes); "" takes the
// key out.
func (n notifyKey) replace(data []byte, line string) []byte {
	if !n.found && line == "" {
		return data
	}
	var out []byte
	out = append(out, data[:n.start]...)
	if n.start > 0 && data[n.start-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, line...)
	return append(out, data[n.end:]...)
}

// findNotify reads the top level of a config.toml, up to its first table
// header, for the notify key. It reads TOML's strings, arrays and
// comments only as far as it needs to tell where a value ends.
func findNotify(data []byte) (notifyKey, error) {
	s := string(data)
	i := 0
	for i < len(s) {
		lineStart := i
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			break
		}
		switch s[i] {
		case '\n', '\r', '#':
			i = lineEnd(s, i)
			continue
		case '[':
			return notifyKey{start: lineStart, end: lineStart}, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		nl := strings.IndexByte(s[i:], '\n')
		if eq < 0 || (nl >= 0 && nl < eq) {
			return notifyKey{}, fmt.Errorf("config.toml line %d: a key without a value", lineNo(s, i))
		}
		key := strings.TrimSpace(s[i : i+eq])
		if uq, err := strconv.Unquote(key); err == nil && len(key) > 0 && key[0] == '"' {
			key = uq
		} else if len(key) >= 2 && key[0] == '\'' && key[len(key)-1] == '\'' {
			key = key[1 : len(key)-1]
		}
		valStart := i + eq + 1
		valEnd, next, err := scanValue(s, valStart)
		if err != nil {
			return notifyKey{}, fmt.Errorf("config.toml line %d: %w", lineNo(s, i), err)
		}
		if key == "notify" {
			argv, err := parseStringArray(s[valStart:valEnd])
			if err != nil {
				return notifyKey{}, fmt.Errorf("config.toml line %d: notify: %w", lineNo(s, i), err)
			}
			return notifyKey{found: true, start: lineStart, end: next, argv: argv}, nil
		}
		i = next
	}
	return notifyKey{start: len(s), end: len(s)}, nil
}

func lineEnd(s string, i int) int {
	if nl := strings.IndexByte(s[i:], '\n'); nl >= 0 {
		return i + nl + 1
	}
	return len(s)
}

func lineNo(s string, i int) int { return strings.Count(s[:i], "\n") + 1 }

// scanValue finds the end of the value that starts at i: valEnd is where
// the value's text stops (before a trailing comment), next the start of
// the line after it.
func scanValue(s string, i int) (valEnd, next int, err error) {
	depth := 0
	for i < len(s) {
		c := s[i]
		switch {
		case strings.HasPrefix(s[i:], `"""`), strings.HasPrefix(s[i:], `'''`):
			delim := s[i : i+3]
			j := i + 3
			for {
				k := strings.Index(s[j:], delim)
				if k < 0 {
					return 0, 0, errors.New("a multi-line string without its end")
				}
				j += k
				if delim == `"""` && escaped(s, j) {
					j++
					continue
				}
				break
			}
			i = j + 3
			for i < len(s) && s[i] == delim[0] { // up to two quotes end the string's content
				i++
			}
		case c == '"' || c == '\'':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\n' {
					return 0, 0, errors.New("a string without its end")
				}
				if c == '"' && s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return 0, 0, errors.New("a string without its end")
			}
			i = j + 1
		case c == '[' || c == '{':
			depth++
			i++
		case c == ']' || c == '}':
			depth--
			if depth < 0 {
				return 0, 0, errors.New("a closing bracket without its opening one")
			}
			i++
		case c == '#':
			if depth == 0 {
				return i, lineEnd(s, i), nil
			}
			i = lineEnd(s, i)
		case c == '\n':
			if depth == 0 {
				return i, i + 1, nil
			}
			i++
		default:
			i++
		}
	}
	if depth != 0 {
		return 0, 0, errors.New("an array without its end")
	}
	return len(s), len(s), nil
}

// escaped says whether the byte at j follows an odd run of backslashes.
func escaped(s string, j int) bool {
	n := 0
	for k := j - 1; k >= 0 && s[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// parseStringArray reads a TOML array of one-line strings: what notify
// holds.
func parseStringArray(v string) ([]string, error) {
	i := 0
	skip := func() {
		for i < len(v) {
			switch v[i] {
			case ' ', '\t', '\r', '\n':
				i++
			case '#':
				i = lineEnd(v, i)
			default:
				return
			}
		}
	}
	skip()
	if i >= len(v) || v[i] != '[' {
		return nil, errors.New("not an array")
	}
	i++
	out := []string{}
	for {
		skip()
		if i >= len(v) {
			return nil, errors.New("an array without its end")
		}
		if v[i] == ']' {
			i++
			break
		}
		str, n, err := parseString(v[i:])
		if err != nil {
			return nil, err
		}
		out = append(out, str)
		i += n
		skip()
		if i < len(v) && v[i] == ',' {
			i++
			continue
		}
		skip()
		if i >= len(v) || v[i] != ']' {
			return nil, errors.New("not an array of strings")
		}
		i++
		break
	}
	skip()
	if i != len(v) {
		return nil, errors.New("something after the array")
	}
	return slices.Clip(out), nil
}

// parseString reads one basic or literal one-line TOML string at the start
// of v and returns it and its length in v.
func parseString(v string) (string, int, error) {
	if strings.HasPrefix(v, `"""`) || strings.HasPrefix(v, `'''`) {
		return "", 0, errors.New("a multi-line string, which agentctl does not edit")
	}
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		return "", 0, errors.New("not an array of strings")
	}
	if v[0] == '\'' {
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", 0, errors.New("a string without its end")
		}
		return v[1 : 1+end], end + 2, nil
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 >= len(v) {
				return "", 0, errors.New("a string without its end")
			}
			i++
			switch v[i] {
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case '"', '\\':
				b.WriteByte(v[i])
			case 'u', 'U':
				n := 4
				if v[i] == 'U' {
					n = 8
				}
				if i+n >= len(v) {
					return "", 0, errors.New("a short unicode escape")
				}
				r, err := strconv.ParseUint(v[i+1:i+1+n], 16, 32)
				if err != nil {
					return "", 0, fmt.Errorf("a unicode escape: %w", err)
				}
				b.WriteRune(rune(r))
				i += n
			default:
				return "", 0, fmt.Errorf("the escape \\%c, which TOML does not have", v[i])
			}
		case '\n':
			return "", 0, errors.New("a string without its end")
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("a string without its end")
}
