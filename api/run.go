package api

import (
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
)

// Normalize checks a launch request and puts it in the one form every
// service that starts sessions (a machine's, a cluster's) consumes: the
// launch contract, written once. It names the adapter by today's name
// (ExecAdapter for a plain command) and refuses what no service can start:
// a working directory that is not absolute, --env values that are not
// KEY=VALUE, ids, names and labels that could become paths or put control
// sequences on a terminal, a permission mode agentctl does not know, agent
// options for a plain command, a plain command without its command, and a
// hook timeout that is not a positive duration. Its errors are CodeInvalid.
//
// What depends on the service (its environment, its user's home for a
// caller with no directory there, the run a resume continues) is filled in
// by the service before it calls Normalize.
func (r *RunRequest) Normalize() error {
	r.Adapter = CanonicalAdapter(r.Adapter)
	if r.Cwd == "" || !filepath.IsAbs(r.Cwd) {
		return Errorf(CodeInvalid, "working directory %s must be an absolute path", text.Quote(r.Cwd))
	}
	for _, kv := range r.EnvOverrides {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return Errorf(CodeInvalid, "--env %s: want KEY=VALUE", text.Quote(kv))
		}
	}
	if err := r.checkNames(); err != nil {
		return err
	}
	if r.PermissionMode != "" && !slices.Contains(PermissionModes(), r.PermissionMode) {
		return Errorf(CodeInvalid, "permission mode %s: want one of %s", text.Quote(r.PermissionMode), strings.Join(PermissionModes(), ", "))
	}
	if r.Adapter == ExecAdapter {
		if r.PermissionMode != "" || len(r.AgentArgs) > 0 {
			return Errorf(CodeInvalid, "a permission mode and agent arguments are for agents; a plain command's arguments are its command")
		}
		if len(r.Command) == 0 {
			return Errorf(CodeInvalid, "no command given: agentctl run -- COMMAND [ARGS...]")
		}
	}
	switch r.OnLimit {
	case "", OnLimitWait, OnLimitResume:
	default:
		return Errorf(CodeInvalid, "on-limit %s: want %s or %s", text.Quote(r.OnLimit), OnLimitWait, OnLimitResume)
	}
	if r.HookTimeout != "" {
		if d, err := time.ParseDuration(r.HookTimeout); err != nil || d <= 0 {
			return Errorf(CodeInvalid, "hook timeout %q: want a positive duration such as 5m", r.HookTimeout)
		}
	}
	return nil
}

// CanonicalAdapter maps the adapter names the old tool used onto today's,
// and "" onto the plain-command adapter.
func CanonicalAdapter(name string) string {
	switch name {
	case "":
		return ExecAdapter
	case "claude-code":
		return "claude"
	}
	return name
}

// checkNames refuses id-like fields that could become paths or put control
// sequences on a terminal: they are echoed by list and used in folders.
func (r *RunRequest) checkNames() error {
	if r.ResumeOf != "" && !home.ValidID(r.ResumeOf) {
		return Errorf(CodeInvalid, "resume_of %s is not a valid session id", text.Quote(r.ResumeOf))
	}
	if r.RestartOf != "" && !home.ValidID(r.RestartOf) {
		return Errorf(CodeInvalid, "restart_of %s is not a valid session id", text.Quote(r.RestartOf))
	}
	if r.Group != "" && !home.ValidID(r.Group) {
		return Errorf(CodeInvalid, "group %s: use letters, digits, '-', '_' and '.' (at most 128, not starting with '.')", text.Quote(r.Group))
	}
	if err := CheckSessionName(r.Name); err != nil {
		return err
	}
	for k, v := range r.Labels {
		if k == "" || len(k) > 128 || strings.ContainsAny(k, "=,") || hasControl(k) || len(v) > 1024 || hasControl(v) {
			return Errorf(CodeInvalid, "label %s=%s: a key of at most 128 characters without '=', ',' or control characters, and a value of at most 1024 without control characters", text.Quote(k), text.Quote(v))
		}
	}
	return nil
}

// CheckSessionName refuses a session name (launch --name, rename) that is
// too long or holds control characters; "" (no name) passes.
func CheckSessionName(name string) error {
	if len(name) > 128 || hasControl(name) {
		return Errorf(CodeInvalid, "name %s: at most 128 characters, no control characters", text.Quote(name))
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
