package integrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// pluginFile is an integration that is one file of agentctl's own in the
// agent's folder of user plugins (OpenCode's plugin, Pi's extension): a
// script embedded in agentctl with the hook's argv written into it.
// Installing writes the file; removing deletes it; the user's other
// plugins are never touched.
type pluginFile struct {
	agent string
	// at is the file's path for the user of env.
	at func(env Env) string
	// script is the embedded file, with the line hookLine in it.
	script []byte
}

// hookLine is the line of an embedded script that holds the hook's argv;
// installing writes the argv into it.
const hookLine = "const HOOK = [];"

// pluginMarker is in every script agentctl installs: a file without it is
// not agentctl's.
const pluginMarker = "agentctl integrate"

func (p pluginFile) Agent() string { return p.agent }

func (p pluginFile) path(env Env) string { return p.at(env) }

// render is the script with env's hook argv in it.
func (p pluginFile) render(env Env) ([]byte, error) {
	if len(env.Hook) == 0 || !filepath.IsAbs(env.Hook[0]) {
		return nil, fmt.Errorf("install the %s integration: the hook command %q is not an absolute path", p.agent, env.Hook)
	}
	argv, err := jsonArray(env.Hook)
	if err != nil {
		return nil, err
	}
	if bytes.Count(p.script, []byte(hookLine)) != 1 {
		return nil, fmt.Errorf("the embedded %s script has no single %q line", p.agent, hookLine)
	}
	return bytes.Replace(p.script, []byte(hookLine), []byte("const HOOK = "+argv+";"), 1), nil
}

func (p pluginFile) Install(ctx context.Context, env Env) (Change, error) {
	if err := ctx.Err(); err != nil {
		return Change{}, err
	}
	script, err := p.render(env)
	if err != nil {
		return Change{}, err
	}
	return EditFile(env, p.agent, p.path(env), func([]byte) ([]byte, error) { return script, nil })
}

func (p pluginFile) Remove(ctx context.Context, env Env) (Change, error) {
	if err := ctx.Err(); err != nil {
		return Change{}, err
	}
	path := p.path(env)
	// What RestoreFile cannot take out of a file that changed since is the
	// whole file: it is agentctl's, deleted below.
	out, err := RestoreFile(env, p.agent, path, func(cur []byte) ([]byte, error) { return cur, nil })
	if err != nil {
		return out, err
	}
	cur, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("remove %s: %w", path, err)
	}
	if !bytes.Contains(cur, []byte(pluginMarker)) {
		// Not agentctl's (a backup restored, or the user's own file).
		return out, nil
	}
	if err := os.Remove(path); err != nil {
		return out, fmt.Errorf("remove %s: %w", path, err)
	}
	if len(out.Files) == 0 {
		out.Files = append(out.Files, path)
	}
	out.Notes = append(out.Notes, path+": removed")
	return out, nil
}

func (p pluginFile) Status(ctx context.Context, env Env) (State, error) {
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	path := p.path(env)
	cur, existed, _, err := readConfig(path)
	if err != nil || !existed {
		return State{Files: []string{path}}, err
	}
	if !bytes.Contains(cur, []byte(pluginMarker)) {
		return State{Files: []string{path}, Detail: path + " is not agentctl's"}, nil
	}
	st := State{Installed: true, Files: []string{path}}
	argv, err := installedHook(cur)
	switch {
	case err != nil:
		st.Detail = "installed, but " + err.Error()
	default:
		st.Detail = binaryProblem(argv[0])
	}
	return st, nil
}

// installedHook reads the hook's argv back from an installed script.
func installedHook(script []byte) ([]string, error) {
	for line := range strings.SplitSeq(string(script), "\n") {
		rest, ok := strings.CutPrefix(line, "const HOOK = ")
		if !ok {
			continue
		}
		var argv []string
		if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(rest), ";")), &argv); err != nil || len(argv) == 0 {
			return nil, errors.New("its hook command cannot be read")
		}
		return argv, nil
	}
	return nil, errors.New("it names no hook command")
}

// binaryProblem says what is wrong with the hook binary an entry names,
// "" when it is an executable file.
func binaryProblem(bin string) string {
	fi, err := os.Stat(bin)
	switch {
	case err != nil:
		return "installed, but the hook names " + bin + ", which does not exist"
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "installed, but the hook names " + bin + ", which is not an executable file"
	}
	return ""
}

// jsonArray is argv as a JSON array (valid JavaScript and TOML too), with
// <, > and & left as they are.
func jsonArray(argv []string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(argv); err != nil {
		return "", fmt.Errorf("encode %q: %w", argv, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
