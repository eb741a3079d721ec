// Package integrate installs, for one user, each agent's own way of
// reporting what it does (Claude Code's hooks, an OpenCode plugin, a Pi
// extension, Codex's notify program) so that it calls `agentctl hook`:
// first-hand evidence for the sessions people start by hand. The user's
// own settings are merged, never replaced; what was there before is kept
// and `agentctl integrate --remove` gives it back byte for byte when
// nothing else changed the file meanwhile.
package integrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/text"
)

// Integration is one agent's integration.
type Integration interface {
	// Agent is the adapter's name: "claude", "codex", "opencode", "pi".
	Agent() string
	// Install merges agentctl's entry into the agent's user configuration.
	// Installing twice changes nothing the second time.
	Install(ctx context.Context, env Env) (Change, error)
	// Remove takes agentctl's entry out and leaves the rest as it is.
	Remove(ctx context.Context, env Env) (Change, error)
	// Status says whether the entry is installed, and where.
	Status(ctx context.Context, env Env) (State, error)
}

// Env is where an integration works.
type Env struct {
	// UserHome is the user's home ($HOME), under which the agents keep
	// their configuration.
	UserHome string
	// StateDir is agentctl's folder for what it installed: the backups of
	// the files it changed and their records (one subfolder per agent).
	StateDir string
	// Hook is the argv that runs `agentctl hook` (the absolute path of the
	// agentctl binary, then "hook" and any --home); the integration adds
	// the agent's name and its flags.
	Hook []string
	// Getenv reads the user's environment, where the agents find their
	// folders (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_CONFIG_HOME,
	// PI_CODING_AGENT_DIR);
	// nil reads none of them set.
	Getenv func(string) string
	// CodexPermissionWait is config.json's integrate.codex_permission_wait:
	// Codex gives its permission hook that much more time.
	CodexPermissionWait time.Duration
}

// getenv is the user's variable k, "" when unset or without Getenv.
func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Change says what Install or Remove did.
type Change struct {
	// Files are the files written or removed.
	Files []string
	// Backups are the copies of the files as they were before.
	Backups []string
	// Notes are what the user should know ("restored byte for byte", "the
	// file changed since: only agentctl's entry was taken out").
	Notes []string
}

// State is an integration's installed state.
type State struct {
	Installed bool
	// Files are where it is installed.
	Files []string
	// Detail says what is odd: "installed, but the hook names a binary
	// that no longer exists".
	Detail string
}

// edit is the record of one file agentctl changed: what it was, and what
// agentctl made of it, so that a remove can tell whether anything else
// changed it since.
type edit struct {
	Path string `json:"path"`
	// Existed says the file was there before; Backup holds its bytes.
	Existed bool   `json:"existed"`
	Backup  string `json:"backup,omitempty"`
	Mode    uint32 `json:"mode"`
	// Written is the sha256 of what agentctl wrote.
	Written string `json:"written"`
}

// maxConfigFile bounds the configuration files an integration reads.
const maxConfigFile = 16 << 20

// EditFile changes the file at path through change, which gets its bytes
// (nil when it does not exist) and returns the new ones. The first time
// agentctl changes the file, a backup of it is kept in env.StateDir/agent
// with a record of what was written; the file keeps its mode (0644 for a
// new one). It returns whether the file changed.
func EditFile(env Env, agent, path string, change func(old []byte) ([]byte, error)) (Change, error) {
	old, existed, mode, err := readConfig(path)
	if err != nil {
		return Change{}, err
	}
	updated, err := change(old)
	if err != nil {
		return Change{}, fmt.Errorf("edit %s: %w", path, err)
	}
	if existed && bytes.Equal(old, updated) {
		return Change{}, nil
	}
	dir := filepath.Join(env.StateDir, agent)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Change{}, fmt.Errorf("keep a backup of %s: %w", path, err)
	}
	recPath := filepath.Join(dir, recordName(path))
	var rec edit
	var out Change
	if err := atomicfile.ReadJSON(recPath, &rec, 1<<20); errors.Is(err, fs.ErrNotExist) {
		rec = edit{Path: path, Existed: existed, Mode: uint32(mode)}
		if existed {
			rec.Backup = filepath.Join(dir, recordName(path)+".orig")
			if err := atomicfile.Write(rec.Backup, old, 0o600); err != nil {
				return Change{}, fmt.Errorf("keep a backup of %s: %w", path, err)
			}
			out.Backups = append(out.Backups, rec.Backup)
		}
	} else if err != nil {
		return Change{}, fmt.Errorf("read the record of %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Change{}, fmt.Errorf("write %s: %w", path, err)
	}
	if err := atomicfile.Write(path, updated, mode); err != nil {
		return Change{}, fmt.Errorf("write %s: %w", path, err)
	}
	rec.Written = digest(updated)
	if err := atomicfile.WriteJSON(recPath, rec, 0o600); err != nil {
		return Change{}, fmt.Errorf("record the change of %s: %w", path, err)
	}
	out.Files = append(out.Files, path)
	return out, nil
}

// RestoreFile undoes EditFile: when the file still holds exactly what
// agentctl wrote, it gets back its bytes from before (or is removed, when
// agentctl created it); when something else changed it since, takeOut
// removes only agentctl's entry from what it holds now. The record and the
// backup are removed afterwards.
func RestoreFile(env Env, agent, path string, takeOut func(cur []byte) ([]byte, error)) (Change, error) {
	recPath := filepath.Join(env.StateDir, agent, recordName(path))
	var rec edit
	haveRec := true
	if err := atomicfile.ReadJSON(recPath, &rec, 1<<20); errors.Is(err, fs.ErrNotExist) {
		haveRec = false
	} else if err != nil {
		return Change{}, fmt.Errorf("read the record of %s: %w", path, err)
	}
	cur, existed, mode, err := readConfig(path)
	if err != nil {
		return Change{}, err
	}
	var out Change
	switch {
	case haveRec && existed && digest(cur) == rec.Written:
		if !rec.Existed {
			if err := os.Remove(path); err != nil {
				return Change{}, fmt.Errorf("remove %s: %w", path, err)
			}
			out.Notes = append(out.Notes, path+": removed (agentctl had created it)")
		} else {
			orig, err := os.ReadFile(rec.Backup)
			if err != nil {
				return Change{}, fmt.Errorf("restore %s from its backup: %w", path, err)
			}
			if err := atomicfile.Write(path, orig, fs.FileMode(rec.Mode)); err != nil {
				return Change{}, fmt.Errorf("restore %s: %w", path, err)
			}
			out.Notes = append(out.Notes, path+": restored byte for byte")
		}
		out.Files = append(out.Files, path)
	case existed:
		updated, err := takeOut(cur)
		if err != nil {
			return Change{}, fmt.Errorf("take agentctl's entry out of %s: %w", path, err)
		}
		if !bytes.Equal(cur, updated) {
			if err := atomicfile.Write(path, updated, mode); err != nil {
				return Change{}, fmt.Errorf("write %s: %w", path, err)
			}
			out.Files = append(out.Files, path)
			if haveRec {
				out.Notes = append(out.Notes, path+": changed since agentctl wrote it: only agentctl's entry was taken out")
			}
		}
	}
	if haveRec {
		if rec.Backup != "" {
			os.Remove(rec.Backup)
		}
		if err := os.Remove(recPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return out, fmt.Errorf("remove the record of %s: %w", path, err)
		}
	}
	return out, nil
}

// readConfig reads a configuration file, bounded; a missing file is no
// error (existed false).
func readConfig(path string) (data []byte, existed bool, mode fs.FileMode, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, 0o644, nil
	}
	if err != nil {
		return nil, false, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		// A symlinked dotfile (a dotfiles repository) is edited where it
		// points: resolve it once, and refuse anything else.
		if fi.Mode()&fs.ModeSymlink == 0 {
			return nil, false, 0, fmt.Errorf("read %s: not a regular file", path)
		}
		if fi, err = os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			return nil, false, 0, fmt.Errorf("read %s: a link to something that is not a regular file", path)
		}
	}
	if fi.Size() > maxConfigFile {
		return nil, false, 0, fmt.Errorf("read %s: %d bytes, more than a configuration file holds", path, fi.Size())
	}
	data, err = os.ReadFile(path)
	if err != nil {
		return nil, false, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return data, true, fi.Mode().Perm(), nil
}

func recordName(path string) string {
	sum := sha256.Sum256([]byte(path))
	return strings.TrimPrefix(filepath.Base(path), ".") + "-" + hex.EncodeToString(sum[:4]) + ".json"
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hookCommandLine is env.Hook with args, quoted for /bin/sh.
func hookCommandLine(env Env, args ...string) string {
	return text.ShellLine(append(append([]string(nil), env.Hook...), args...))
}
