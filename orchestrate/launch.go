package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/api"
)

// Labels a member's session carries, so `group status` can find its
// worktree and measure its diff, and `list --label` can filter on them.
const (
	LabelMember     = "member"      // the member's suffix in its group
	LabelWorktree   = "worktree"    // the worktree's path
	LabelBranch     = "branch"      // the member's branch
	LabelBase       = "base"        // the base as resolved ("origin/main", "HEAD")
	LabelBaseCommit = "base_commit" // the commit the branch started from
)

// Starter starts one session and returns it once started; the service's
// client is one.
type Starter interface {
	Launch(ctx context.Context, req api.RunRequest) (api.Session, error)
}

// Request is a launch of one or more members.
type Request struct {
	// Group is the group id; empty: a new g-xxxxxx.
	Group string
	// Repo, when set, gives every member a worktree and branch of the git
	// repository that holds this folder; each member starts in the same
	// subfolder of its worktree. Empty: members start in Template.Cwd.
	Repo string
	// Branch is the branch of a single member (instead of
	// try/<group>/<suffix>); refused with several members.
	Branch string
	// Base is the base branch of members that name none; empty: HEAD.
	Base string
	// Members are the sessions to start, in order.
	Members []Member
	// Template is copied into every member's request; the member sets
	// Adapter, Model, Cwd and Group, and adds labels.
	Template api.RunRequest
	// Parallel bounds how many members are set up at once (default 8).
	Parallel int
}

// Result is what happened to every member, in the request's order.
type Result struct {
	Group   string         `json:"group"`
	Repo    string         `json:"repo,omitempty"`
	Members []MemberResult `json:"members"`
}

// MemberResult is one member's outcome: its session, or why it has none.
type MemberResult struct {
	Member
	Suffix   string `json:"suffix"`
	Worktree string `json:"worktree,omitempty"`
	// Reused says the worktree existed already (a named branch).
	Reused bool `json:"reused,omitempty"`
	// BaseRef is the base as resolved: the ref and the commit the branch
	// started from.
	BaseRef *Base `json:"base_ref,omitempty"`
	// Cwd is where the member's session runs.
	Cwd     string       `json:"cwd,omitempty"`
	Session *api.Session `json:"session,omitempty"`
	// Error says why the member did not start; empty when it did.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// Failed lists the members that did not start.
func (r Result) Failed() []MemberResult {
	var out []MemberResult
	for _, m := range r.Members {
		if m.Err != nil {
			out = append(out, m)
		}
	}
	return out
}

// Stage is where a member is in its launch.
type Stage int

const (
	Queued   Stage = iota // waiting for its turn; the detail is the member's name (suffix)
	Fetching              // fetching its base branch
	Creating              // creating its worktree
	Starting              // asking the service to start it
	Started               // running; the detail is its session id
	Failed                // did not start; the detail says why
)

// Progress hears about every member's stage changes. Calls may come from
// several goroutines at once.
type Progress interface {
	Update(member int, stage Stage, detail string)
}

// Launch sets up and starts the members in parallel. A member that fails
// (its base, its worktree, its start) does not stop the others: its result
// carries the error. The returned error is for problems that stop every
// member (not a git repository, an invalid group id, conflicting branches).
func Launch(ctx context.Context, s Starter, req Request, p Progress) (Result, error) {
	if len(req.Members) == 0 {
		return Result{}, errors.New("no members to launch")
	}
	if p == nil {
		p = nopProgress{}
	}
	if req.Group != "" && !ValidGroup(req.Group) {
		return Result{}, fmt.Errorf("group %q: use letters, digits, '-', '_' and '.' (at most 64)", req.Group)
	}
	if req.Branch != "" && len(req.Members) > 1 {
		return Result{}, fmt.Errorf("--branch names one branch, but there are %d members (each needs its own; they get try/<group>/<member>, or name them per entry in a matrix file)", len(req.Members))
	}
	res := Result{Group: req.Group, Members: make([]MemberResult, len(req.Members))}
	var repo Repo
	if req.Repo != "" {
		var err error
		if repo, err = FindRepo(ctx, req.Repo); err != nil {
			return Result{}, err
		}
		res.Repo = repo.Root
	}
	if res.Group == "" {
		g, err := newGroup(ctx, repo.Root)
		if err != nil {
			return Result{}, err
		}
		res.Group = g
	}

	var taken func(string) bool
	if repo.Root != "" {
		existing, err := branchesUnder(ctx, repo.Root, "try/"+res.Group+"/")
		if err != nil {
			return Result{}, err
		}
		taken = func(suffix string) bool {
			b := BranchName(res.Group, suffix)
			if existing[b] {
				return true
			}
			_, err := os.Lstat(WorktreePath(repo.Root, b))
			return err == nil
		}
	}
	suffixes := Suffixes(req.Members, taken)
	branchOwner := map[string]int{}
	for i, m := range req.Members {
		mr := &res.Members[i]
		mr.Member, mr.Suffix = m, suffixes[i]
		if mr.Base == "" {
			mr.Base = req.Base
		}
		if repo.Root == "" {
			continue
		}
		if mr.Branch == "" {
			mr.Branch = req.Branch
		}
		if mr.Branch == "" {
			mr.Branch = BranchName(res.Group, mr.Suffix)
		}
		if j, dup := branchOwner[mr.Branch]; dup {
			return Result{}, fmt.Errorf("members %d and %d both use branch %s; a branch can be checked out in one worktree only", j+1, i+1, mr.Branch)
		}
		branchOwner[mr.Branch] = i
		mr.Worktree = WorktreePath(repo.Root, mr.Branch)
	}

	// Bases are resolved once each, before the members run in parallel:
	// several members fetching the same branch would only race.
	bases := map[string]*Base{}
	baseErr := map[string]error{}
	if repo.Root != "" {
		for i, mr := range res.Members {
			if _, done := bases[mr.Base]; done || baseErr[mr.Base] != nil {
				continue
			}
			if mr.Base != "" {
				p.Update(i, Fetching, mr.Base)
			}
			b, err := ResolveBase(ctx, repo.Root, mr.Base)
			if err != nil {
				baseErr[mr.Base] = err
				continue
			}
			bases[mr.Base] = &b
		}
	}

	limit := req.Parallel
	if limit <= 0 {
		limit = 8
	}
	sem := make(chan struct{}, limit)
	var register sync.Mutex
	var wg sync.WaitGroup
	for i := range res.Members {
		p.Update(i, Queued, res.Members[i].Suffix)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			mr := &res.Members[i]
			if err := launchMember(ctx, s, req, res.Group, repo, &register, bases[mr.Base], baseErr[mr.Base], mr, i, p); err != nil {
				mr.Err, mr.Error = err, err.Error()
				p.Update(i, Failed, err.Error())
			}
		}()
	}
	wg.Wait()
	return res, nil
}

// launchMember sets up one member's worktree and starts its session.
func launchMember(ctx context.Context, s Starter, req Request, group string, repo Repo, register sync.Locker, base *Base, baseErr error, mr *MemberResult, i int, p Progress) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not started: %w", err)
	}
	rr := req.Template
	rr.Adapter, rr.Model, rr.Group = mr.Adapter, mr.Model, group
	rr.Labels = maps.Clone(req.Template.Labels)
	if rr.Labels == nil {
		rr.Labels = map[string]string{}
	}
	if len(req.Members) > 1 && rr.Name != "" {
		rr.Name += "-" + mr.Suffix
	}
	if repo.Root != "" {
		if baseErr != nil {
			return baseErr
		}
		mr.Base = base.Name
		mr.BaseRef = base
		p.Update(i, Creating, mr.Worktree)
		newBranch := !BranchExists(ctx, repo.Root, mr.Branch)
		reused, addErr := AddWorktree(ctx, repo.Root, mr.Worktree, mr.Branch, base.Commit, register)
		if addErr != nil {
			return fmt.Errorf("create worktree %s: %w", mr.Worktree, addErr)
		}
		mr.Reused = reused
		if !reused {
			// A member that does not start leaves no worktree or branch
			// behind: nothing was done in them yet.
			defer func() {
				if err == nil {
					return
				}
				// Under the register lock like the add: git takes its
				// ref and worktree locks without waiting, so an undo
				// beside another member's add could fail on them.
				undo := context.WithoutCancel(ctx)
				register.Lock()
				defer register.Unlock()
				if rmErr := RemoveWorktree(undo, repo.Root, mr.Worktree, true); rmErr != nil {
					err = fmt.Errorf("%w (the worktree made for it stays: %v)", err, rmErr)
					return
				}
				mr.Worktree, mr.Cwd = "", ""
				if newBranch {
					if _, brErr := DeleteBranch(undo, repo.Root, mr.Branch); brErr != nil {
						err = fmt.Errorf("%w (its branch %s stays: %v)", err, mr.Branch, brErr)
					}
				}
			}()
		}
		mr.Cwd = mr.Worktree
		if repo.Prefix != "" {
			sub := filepath.Join(mr.Worktree, repo.Prefix)
			if st, err := os.Stat(sub); err != nil || !st.IsDir() {
				return fmt.Errorf("worktree %s has no %s (is it committed on %s?)", mr.Worktree, repo.Prefix, base.Ref)
			}
			mr.Cwd = sub
		}
		rr.Cwd = mr.Cwd
		rr.Labels[LabelMember] = mr.Suffix
		rr.Labels[LabelWorktree] = mr.Worktree
		rr.Labels[LabelBranch] = mr.Branch
		rr.Labels[LabelBase] = base.Ref
		rr.Labels[LabelBaseCommit] = base.Commit
	} else {
		mr.Cwd = rr.Cwd
		if len(req.Members) > 1 {
			rr.Labels[LabelMember] = mr.Suffix
		}
	}
	if len(rr.Labels) == 0 {
		rr.Labels = nil
	}
	rr.Env = withPWD(req.Template.Env, rr.Cwd)
	p.Update(i, Starting, "")
	sess, err := s.Launch(ctx, rr)
	if err != nil {
		return err
	}
	mr.Session = &sess
	p.Update(i, Started, sess.ID)
	return nil
}

// withPWD returns a copy of env whose PWD is dir. The caller's PWD names
// the folder the command was typed in, not the member's worktree, and some
// agents (OpenCode) take PWD over their real working directory and would
// work in the wrong tree.
func withPWD(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PWD=") {
			out = append(out, kv)
		}
	}
	if dir == "" {
		return out
	}
	return append(out, "PWD="+dir)
}

// newGroup makes a group id no branch of the repository uses yet.
func newGroup(ctx context.Context, repo string) (string, error) {
	for range 16 {
		g, err := NewGroupID(nil)
		if err != nil {
			return "", err
		}
		if repo == "" {
			return g, nil
		}
		used, err := branchesUnder(ctx, repo, "try/"+g+"/")
		if err != nil {
			return "", err
		}
		if len(used) == 0 {
			return g, nil
		}
	}
	return "", errors.New("make a group id: every one tried is in use")
}

type nopProgress struct{}

func (nopProgress) Update(int, Stage, string) {}
