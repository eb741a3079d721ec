package integrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	codexadapter "github.com/agentctl/agentctl/adapters/codex"
)

// Codex's own hooks: agentctl's entries in $CODEX_HOME/hooks.json, one
// group per event appended to the user's, and the trust Codex asks for
// them. Codex runs a user's hook only once it is trusted: config.toml's
// [hooks.state."<hooks.json>:<event>:<group>:<handler>"] holds the
// trusted_hash of the hook as it was when trusted. `agentctl integrate
// codex` is the user trusting agentctl's hooks, so it writes those too
// (Codex would otherwise ask at its next start, and run none until asked).

// codexHookEvents are the hooks installed: Codex's event, its key in the
// trust table, and the time limit (seconds) Codex gives the hook. The
// hooks return within milliseconds, and Codex cuts a broken binary's after
// 2 s (it shows "hook failed" and goes on); a permission request's waits
// for a person as long as config.json's integrate.codex_permission_wait
// says (the hook itself keeps to it), so its limit is that wait's more
// (codexHookTimeout): Codex shows its own prompt only once the hook is
// done, and a hung binary must not hold it longer. Codex waits for each (run
// asynchronously, a turn's start could reach the service after its end),
// so only the events that say something are installed: SessionStart
// comes with the first prompt from the shared daemon, and says no more
// than that prompt's report.
var codexHookEvents = []struct {
	name, label string
	timeout     int
}{
	{"UserPromptSubmit", "user_prompt_submit", 2},
	{"PermissionRequest", "permission_request", 2},
	{"PostToolUse", "post_tool_use", 2},
	{"Stop", "stop", 2},
}

// codexHookTimeout is the time limit (seconds) of agentctl's hook for
// event in env: its own, and a permission request's the wait more.
func codexHookTimeout(env Env, event string, timeout int) int {
	if event == "PermissionRequest" {
		return timeout + int(env.CodexPermissionWait.Round(time.Second)/time.Second)
	}
	return timeout
}

// codexHome is $CODEX_HOME, else ~/.codex: where Codex keeps its
// configuration, by the codex adapter's rule.
func codexHome(env Env) string { return codexadapter.Home(env.UserHome, env.getenv) }

func codexHooksFile(env Env) string { return filepath.Join(codexHome(env), "hooks.json") }

// isOurCodexHook says whether a hooks.json command is agentctl's (of any
// agentctl binary: one that moved is replaced).
func isOurCodexHook(command string) bool {
	return strings.Contains(command, " hook ") && strings.Contains(command, " codex ") && strings.Contains(command, "--integration")
}

// addCodexHooks adds agentctl's hook for each event to old (hooks.json),
// taking out agentctl's earlier ones; the same bytes when they are there
// already.
func addCodexHooks(old []byte, env Env) ([]byte, error) {
	hooks := make([]hookEntry, 0, len(codexHookEvents))
	for _, ev := range codexHookEvents {
		hooks = append(hooks, hookEntry{ev.name, hookCommandLine(env, "codex", "--integration", "--event", ev.name), codexHookTimeout(env, ev.name, ev.timeout)})
	}
	return addHooks(old, isOurCodexHook, hooks)
}

// removeCodexHooks takes agentctl's hooks out of cur (hooks.json).
func removeCodexHooks(cur []byte) ([]byte, error) {
	root, err := settingsObject(cur)
	if err != nil {
		return nil, err
	}
	if !takeOutHooks(root, isOurCodexHook) {
		return cur, nil
	}
	return encodeOrdered(root, indentOf(cur))
}

// codexTrust is one trust entry: the hook's key in config.toml's
// hooks.state, and its hash.
type codexTrust struct{ key, hash string }

// codexTrusts lists the trust entries of agentctl's hooks in data (the
// hooks.json at path), and which events have one of agentctl's hooks. A
// hook whose hash agentctl cannot compute as Codex does gets no entry:
// Codex then asks the user.
func codexTrusts(data []byte, path string) ([]codexTrust, map[string]bool, error) {
	root, err := settingsObject(data)
	if err != nil {
		return nil, nil, err
	}
	hv, _ := root.get("hooks")
	hooks, _ := hv.(*object)
	found := map[string]bool{}
	if hooks == nil {
		return nil, found, nil
	}
	var out []codexTrust
	for _, ev := range codexHookEvents {
		groups, _ := hooks.get(ev.name)
		list, _ := groups.([]any)
		for gi, g := range list {
			if o, ok := g.(*object); ok {
				if _, has := o.get("matcher"); has {
					continue // not agentctl's group
				}
			}
			for hi, h := range hooksOf(g) {
				cmd := commandOf(h)
				if !isOurCodexHook(cmd) {
					continue
				}
				found[ev.name] = true
				timeout := ev.timeout
				if o, ok := h.(*object); ok {
					if v, _ := o.get("timeout"); v != nil {
						n, err := strconv.Atoi(fmt.Sprint(v))
						if err != nil {
							continue
						}
						timeout = n
					}
				}
				hash, ok := codexHookHash(ev.label, cmd, timeout)
				if !ok {
					continue
				}
				out = append(out, codexTrust{key: fmt.Sprintf("%s:%s:%d:%d", path, ev.label, gi, hi), hash: hash})
			}
		}
	}
	return out, found, nil
}

// codexHookHash is the hash Codex 0.169 trusts a command hook by: the
// sha256 of its normalized identity (the event's key, the group with that
// one hook, its defaults filled in) as JSON with sorted keys and no
// spaces. ok is false when the command holds what Go's JSON and Codex's
// would write differently.
func codexHookHash(label, command string, timeout int) (string, bool) {
	if !utf8.ValidString(command) || strings.ContainsAny(command, "\u2028\u2029") {
		return "", false
	}
	for i := 0; i < len(command); i++ {
		if command[i] < 0x20 || command[i] == 0x7f {
			return "", false
		}
	}
	// Fields in sorted order, as Codex sorts them.
	type handler struct {
		Async   bool   `json:"async"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
		Type    string `json:"type"`
	}
	identity := struct {
		EventName string    `json:"event_name"`
		Hooks     []handler `json:"hooks"`
	}{label, []handler{{Command: command, Timeout: timeout, Type: "command"}}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(identity); err != nil {
		return "", false
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), true
}

// stateHeader matches a [hooks.state."KEY"] table header line.
var stateHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[ \t]*\[[ \t]*hooks[ \t]*\.[ \t]*state[ \t]*\.[ \t]*("(?:[^"\\]|\\.)*")[ \t]*\][ \t]*(?:#.*)?\r?$`)
})

// trustLine matches a table body's only line: trusted_hash = "...".
var trustLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[ \t]*trusted_hash[ \t]*=[ \t]*"(sha256:[0-9a-f]{64})"[ \t]*(?:#.*)?\r?$`)
})

// stateTable is one [hooks.state."KEY"] table of config.toml: the bytes
// [start, end) from its header to its last line before the next header
// (blank lines after it are not its); hash is its
// trusted_hash when that is all it holds ("" otherwise).
type stateTable struct {
	key        string
	start, end int
	hash       string
}

// stateTables finds config.toml's [hooks.state."KEY"] tables, read as
// lines (Codex writes them so).
func stateTables(data []byte) []stateTable {
	s := string(data)
	var out []stateTable
	var cur *stateTable
	lines, body, last := 0, "", 0
	closeCur := func() {
		if cur != nil {
			cur.end = last
			if lines != 1 {
				cur.hash = ""
			} else {
				cur.hash = body
			}
			out = append(out, *cur)
			cur = nil
		}
	}
	for i := 0; i < len(s); {
		end := lineEnd(s, i)
		line := strings.TrimRight(s[i:end], "\n")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			closeCur()
			if m := stateHeader().FindStringSubmatch(line); m != nil {
				if key, n, err := parseString(m[1]); err == nil && n == len(m[1]) {
					cur = &stateTable{key: key, start: i}
					lines, body, last = 0, "", end
				}
			}
		} else if cur != nil && trimmed != "" {
			last = end
			if strings.HasPrefix(trimmed, "#") {
				i = end
				continue
			}
			lines++
			if m := trustLine().FindStringSubmatch(line); m != nil {
				body = m[1]
			} else {
				lines++ // anything else: not a bare trust entry
			}
		}
		i = end
	}
	closeCur()
	return out
}

// withoutTrusts takes out of config.toml the bare trust entries that are
// agentctl's: those of keys (its hooks' slots now) or of hashes (its
// hooks, wherever they were), each with the blank line before it that
// Codex (and agentctl) writes between tables.
func withoutTrusts(data []byte, keys, hashes map[string]bool) []byte {
	var out []byte
	from := 0 // data[from:] is not copied yet
	for _, t := range stateTables(data) {
		if t.hash == "" || !(keys[t.key] || hashes[t.hash]) {
			continue
		}
		start := t.start
		if start >= 2 && data[start-1] == '\n' && data[start-2] == '\n' {
			start--
		}
		if start > from {
			out = append(out, data[from:start]...)
		}
		from = t.end
	}
	if out == nil && from == 0 {
		return data
	}
	return append(out, data[from:]...)
}

// withTrusts gives config.toml the trust entries of agentctl's hooks,
// replacing agentctl's earlier ones; a slot whose table holds more than a
// trust entry (the user disabled that hook) is left as it is.
func withTrusts(data []byte, trusts []codexTrust, hashes map[string]bool) ([]byte, error) {
	keys := map[string]bool{}
	for _, t := range trusts {
		keys[t.key] = true
	}
	out := withoutTrusts(data, keys, hashes)
	left := map[string]bool{}
	for _, t := range stateTables(out) {
		left[t.key] = true
	}
	for _, t := range trusts {
		if left[t.key] {
			continue
		}
		key, err := json.Marshal(t.key)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		// JSON's strings and their escapes are TOML basic strings.
		out = fmt.Appendf(out, "\n[hooks.state.%s]\ntrusted_hash = %q\n", key, t.hash)
	}
	return out, nil
}

// ourCodexHashes are the hashes of agentctl's hooks as env installs them.
func ourCodexHashes(env Env) map[string]bool {
	out := map[string]bool{}
	for _, ev := range codexHookEvents {
		if h, ok := codexHookHash(ev.label, hookCommandLine(env, "codex", "--integration", "--event", ev.name), codexHookTimeout(env, ev.name, ev.timeout)); ok {
			out[h] = true
		}
	}
	return out
}

// codexKeyPath is hooks.json's path as Codex names it in its trust keys:
// absolute, its folder's links resolved.
func codexKeyPath(env Env) string {
	dir := codexHome(env)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return filepath.Join(dir, "hooks.json")
}
