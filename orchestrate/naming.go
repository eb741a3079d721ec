// Package orchestrate starts groups of sessions that work on the same task
// side by side: each member an adapter (and model) in its own git worktree
// and branch, all tagged with one group id so they can be compared. It also
// reads matrix files, adds context files to a prompt, and lists, measures and
// removes worktrees. The names it gives (group ids g-xxxxxx, branches
// try/<group>/<suffix>, worktrees <repo>-try-<group>-<suffix>) are those of
// the tool agentctl replaces, so existing scripts and habits keep working.
package orchestrate

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Member is one session of a group: an adapter, optionally a model, and
// optionally its own branch and base.
type Member struct {
	Adapter string `json:"adapter"`
	Model   string `json:"model,omitempty"`
	// Branch, when set, is used as is instead of try/<group>/<suffix>.
	Branch string `json:"branch,omitempty"`
	// Base is the branch the member's branch starts from; empty: the
	// request's base, else the repository's HEAD.
	Base string `json:"base,omitempty"`
}

// Label is how a member is named in messages: "adapter (model)".
func (m Member) Label() string {
	if m.Model == "" {
		return m.Adapter
	}
	return m.Adapter + " (" + m.Model + ")"
}

// NewGroupID returns "g-" and six lowercase hex digits read from random
// (crypto/rand when nil).
func NewGroupID(random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [3]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", fmt.Errorf("make a group id: %w", err)
	}
	return "g-" + hex.EncodeToString(b[:]), nil
}

// ValidGroup reports whether g can be used as a group id: it becomes part of
// branch and directory names, so only letters, digits, '-', '_' and '.' are
// allowed, at most 64 of them, not starting with '.' or '-'.
func ValidGroup(g string) bool {
	if g == "" || len(g) > 64 || g[0] == '.' || g[0] == '-' || strings.Contains(g, "..") {
		return false
	}
	for _, r := range g {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return !strings.HasSuffix(g, ".lock") && !strings.HasSuffix(g, ".")
}

// AdapterShort is the adapter's part of a member suffix: "cc" for Claude
// Code, "pi-rs" for pi-rust, the name itself otherwise.
func AdapterShort(adapter string) string {
	switch adapter {
	case "claude", "claude-code":
		return "cc"
	case "pi-rust":
		return "pi-rs"
	}
	return nameSafe(adapter, "agent")
}

var (
	// Compiled on first use: package init runs at every CLI start.
	familyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)opus|sonnet|haiku`) })
	gptRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)gpt[- ]?(\d+)(\.\d+)?`) })
	splitRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[/:-]`) })
)

// ModelShort is the model's part of a member suffix: the Claude family
// (opus, sonnet, haiku); gpt<major> plus what follows the version
// ("gpt-5.2-codex" → "gpt5-codex"); else the last part after '/', ':' or
// '-'; "default" when there is no model.
func ModelShort(model string) string {
	if m := familyRE().FindString(model); m != "" {
		return strings.ToLower(m)
	}
	if loc := gptRE().FindStringSubmatchIndex(model); loc != nil {
		out := "gpt" + model[loc[2]:loc[3]]
		rest := strings.TrimLeft(model[loc[1]:], "-_. /:")
		if rest = nameSafe(rest, ""); rest != "" {
			out += "-" + rest
		}
		return out
	}
	parts := splitRE().Split(model, -1)
	return nameSafe(parts[len(parts)-1], "default")
}

// nameSafe keeps [a-z0-9-] of s (lowercased), trims '-' at both ends, and
// returns def when nothing is left.
func nameSafe(s, def string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return def
	}
	return out
}

// Suffixes names each member within its group: the adapter's short name,
// plus the model's when the adapter appears more than once; a name that
// repeats, or that taken refuses (a branch or directory that already
// exists), gets -2, -3, ... in order. taken may be nil.
func Suffixes(members []Member, taken func(suffix string) bool) []string {
	count := map[string]int{}
	for _, m := range members {
		count[m.Adapter]++
	}
	out := make([]string, len(members))
	seen := map[string]bool{}
	for i, m := range members {
		s := AdapterShort(m.Adapter)
		if count[m.Adapter] > 1 {
			s += "-" + ModelShort(m.Model)
		}
		out[i] = unique(s, func(c string) bool { return seen[c] || taken != nil && taken(c) })
		seen[out[i]] = true
	}
	return out
}

// unique returns base, or base-2, base-3, ... the first that taken refuses.
func unique(base string, taken func(string) bool) string {
	if !taken(base) {
		return base
	}
	for n := 2; ; n++ {
		if c := base + "-" + strconv.Itoa(n); !taken(c) {
			return c
		}
	}
}

// BranchName is a member's generated branch: try/<group>/<suffix>.
func BranchName(group, suffix string) string { return "try/" + group + "/" + suffix }

// WorktreePath is where a branch's worktree goes: next to the repository,
// named <repo>-<branch with '/' replaced by '-'>.
func WorktreePath(repo, branch string) string {
	return strings.TrimRight(repo, "/") + "-" + strings.ReplaceAll(branch, "/", "-")
}
