package session

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
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
		return "", faultf(ErrInvalid, "%s is not a valid session id, nor the name of a session (see `agentctl list -a`)", text.Quote(handle))
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
		return "", faultf(ErrNotFound, "no session is named %s", text.Quote(name))
	}
	return latest.ID, nil
}

// holdingName is the session other than self that holds name: a running
// one, or a queued one, which will run under it.
func (r *records) holdingName(name, self string) (api.Session, bool) {
	all, _, err := r.all()
	if err != nil {
		return api.Session{}, false
	}
	for _, s := range all {
		if s.Name == name && s.ID != self && (s.Status == api.StatusRunning || s.Status == api.StatusQueued) {
			return s, true
		}
	}
	return api.Session{}, false
}

// idStartingWith is a launched session whose id begins with name (any
// case), when name is long enough to be shown as a handle: a name must not
// shadow a handle a list printed.
func (r *records) idStartingWith(name string) (string, bool) {
	if len(name) < minHandle || !home.ValidID(name) {
		return "", false
	}
	ids, err := r.ids()
	if err != nil {
		return "", false
	}
	for _, id := range ids {
		if len(id) >= len(name) && strings.EqualFold(id[:len(name)], name) {
			return id, true
		}
	}
	return "", false
}

// handles maps each id of `of` to its shortest unique prefix among
// `among`, compared without case, at least minHandle characters long (the
// whole id when it is shorter, or when it is a prefix of another). An id
// equal to it (in any case) does not count against it. A few ids are
// compared with every other one; many are placed among the others sorted.
func handles(of, among []string) map[string]string {
	lows := make([]string, len(among))
	for i, id := range among {
		lows[i] = strings.ToLower(id)
	}
	var longest func(low string) int
	if len(of) <= linearHandles {
		longest = func(low string) int {
			n := 0
			for _, o := range lows {
				if o != low {
					n = max(n, commonPrefix(low, o))
				}
			}
			return n
		}
	} else {
		slices.Sort(lows)
		longest = func(low string) int { return longestSorted(lows, low) }
	}
	out := make(map[string]string, len(of))
	for _, id := range of {
		out[id] = handleOf(id, longest)
	}
	return out
}

// handleOf is id's handle, given the longest prefix its lower-cased form
// shares with another id.
func handleOf(id string, longest func(low string) int) string {
	n := min(max(minHandle, longest(strings.ToLower(id))+1), len(id))
	return id[:n]
}

// longestSorted is the longest prefix low shares with an id of lows
// (sorted, lower-cased) other than itself.
func longestSorted(lows []string, low string) int {
	i, _ := slices.BinarySearch(lows, low)
	j := i
	for j < len(lows) && lows[j] == low {
		j++
	}
	n := 0
	if i > 0 {
		n = commonPrefix(low, lows[i-1])
	}
	if j < len(lows) {
		n = max(n, commonPrefix(low, lows[j]))
	}
	return n
}

// handleIndex keeps the ids handles were last found among, lower-cased
// and sorted, and the handles found: a list between changes knows the same
// ids, and takes each handle found before rather than sorting them and
// searching again. A session's handle is its shortest unique prefix among
// every session id known (launched ones and those listed).
type handleIndex struct {
	mu   sync.Mutex
	ids  []string // as last given
	lows []string // sorted
	hs   []string // the handle of ids[i]; "" until asked for
}

// handles returns the handle of each of ids among known and ids, kept
// from the last call when those are the same list of ids. The result must
// not be changed.
func (x *handleIndex) handles(known, ids []string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.same(known, ids) {
		among := make([]string, 0, len(known)+len(ids))
		among = append(among, known...)
		among = append(among, ids...)
		lows := make([]string, len(among))
		for i, id := range among {
			lows[i] = strings.ToLower(id)
		}
		slices.Sort(lows)
		x.ids, x.lows, x.hs = among, lows, make([]string, len(among))
	}
	longest := func(low string) int { return longestSorted(x.lows, low) }
	for i := len(known); i < len(x.ids); i++ {
		// A handle once found is not written again: an earlier caller may
		// be reading it.
		if x.hs[i] == "" && x.ids[i] != "" {
			x.hs[i] = handleOf(x.ids[i], longest)
		}
	}
	return x.hs[len(known):]
}

// size is how many ids were last given.
func (x *handleIndex) size() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.ids)
}

// same says the ids kept are those of known followed by ids.
func (x *handleIndex) same(known, ids []string) bool {
	return x.lows != nil && len(x.ids) == len(known)+len(ids) && slices.Equal(x.ids[:len(known)], known) && slices.Equal(x.ids[len(known):], ids)
}

// linearHandles is up to how many handles are found by comparing each id
// with every other, rather than by sorting them all.
const linearHandles = 16

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
