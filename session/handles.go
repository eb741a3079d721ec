package session

import (
	"errors"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// minHandle is the shortest id prefix a list shows as a session's handle.
const minHandle = 4

// resolveLaunched turns a handle into the id of a session this service
// launched. A handle is, in this order: a whole id (any case), a session's
// name (the running session of that name, else the latest ended one), or
// a unique prefix of an id (any case). ErrNotFound when nothing matches.
func (r *records) resolveLaunched(handle string) (string, error) {
	ids, err := r.ids()
	if err != nil {
		return "", err
	}
	valid := home.ValidID(handle)
	if valid {
		for _, id := range ids {
			if strings.EqualFold(id, handle) {
				return id, nil
			}
		}
	}
	if id, err := r.byName(handle); err == nil || !errors.Is(err, ErrNotFound) {
		return id, err
	}
	if !valid {
		return "", faultf(ErrInvalid, "%q is not a valid session id, nor the name of a session (see `agentctl list -a`)", handle)
	}
	return resolvePrefix(handle, ids)
}

// byName is the session named name: the running one (names are unique
// among running sessions), else the one created last.
func (r *records) byName(name string) (string, error) {
	all, _, err := r.all()
	if err != nil {
		return "", err
	}
	var latest *api.Session
	for i := range all {
		s := &all[i]
		if s.Name != name {
			continue
		}
		if s.Status == api.StatusRunning {
			return s.ID, nil
		}
		if latest == nil || s.CreatedAt.After(latest.CreatedAt) {
			latest = s
		}
	}
	if latest == nil {
		return "", faultf(ErrNotFound, "no session is named %q", name)
	}
	return latest.ID, nil
}

// runningNamed is the running session called name, if any.
func (r *records) runningNamed(name string) (string, bool) {
	all, _, err := r.all()
	if err != nil {
		return "", false
	}
	for _, s := range all {
		if s.Name == name && s.Status == api.StatusRunning {
			return s.ID, true
		}
	}
	return "", false
}

// handles maps each id to its shortest unique prefix among ids, compared
// without case, at least minHandle characters long (the whole id when it is
// shorter, or when it is a prefix of another).
func handles(ids []string) map[string]string {
	type entry struct{ id, low string }
	es := make([]entry, 0, len(ids))
	for _, id := range ids {
		es = append(es, entry{id, strings.ToLower(id)})
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.low, b.low) })
	out := make(map[string]string, len(es))
	for i, e := range es {
		n := minHandle
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= len(es) || es[j].low == e.low {
				continue
			}
			if l := commonPrefix(e.low, es[j].low) + 1; l > n {
				n = l
			}
		}
		if n > len(e.id) {
			n = len(e.id)
		}
		out[e.id] = e.id[:n]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// setHandles fills each session's Handle: its shortest unique prefix among
// every session id known (launched ones and those listed).
func (c *Core) setHandles(ss []api.Session, known []string) {
	ids := make([]string, 0, len(known)+len(ss))
	seen := make(map[string]bool, len(known)+len(ss))
	for _, id := range known {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, s := range ss {
		if !seen[s.ID] {
			seen[s.ID] = true
			ids = append(ids, s.ID)
		}
	}
	h := handles(ids)
	for i := range ss {
		ss[i].Handle = h[ss[i].ID]
	}
}
