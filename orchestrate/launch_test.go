package orchestrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// recordingStarter stands in for the service at the API boundary: it keeps
// every request and refuses adapters named "bogus" the way the service
// does. The end-to-end tests drive the real service.
type recordingStarter struct {
	mu   sync.Mutex
	reqs []api.RunRequest
}

func (r *recordingStarter) Launch(_ context.Context, req api.RunRequest) (api.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Adapter == "bogus" {
		return api.Session{}, api.Errorf(api.CodeInvalid, "unknown adapter %q", req.Adapter)
	}
	r.reqs = append(r.reqs, req)
	return api.Session{ID: fmt.Sprintf("s%d", len(r.reqs)), Adapter: req.Adapter, Cwd: req.Cwd, Group: req.Group, Labels: req.Labels}, nil
}

// stageLog records progress updates.
type stageLog struct {
	mu     sync.Mutex
	stages map[int][]Stage
}

func (s *stageLog) Update(i int, st Stage, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stages == nil {
		s.stages = map[int][]Stage{}
	}
	s.stages[i] = append(s.stages[i], st)
}

func TestLaunchGroup(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	head := gitIn(t, repo, "rev-parse", "HEAD")
	st := &recordingStarter{}
	progress := &stageLog{}
	tmpl := api.RunRequest{Prompt: "fix it", Env: []string{"A=1", "PWD=/where/the/command/was/typed"}, Name: "cmp", Labels: map[string]string{"ticket": "42"}}
	res, err := Launch(ctx, st, Request{
		Repo: filepath.Join(repo, "pkg"),
		Members: []Member{
			{Adapter: "claude", Model: "claude-opus-4-1"},
			{Adapter: "claude", Model: "sonnet"},
			{Adapter: "codex"},
		},
		Template: tmpl,
	}, progress)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^g-[0-9a-f]{6}$`).MatchString(res.Group) || res.Repo != repo {
		t.Fatalf("group %q repo %q", res.Group, res.Repo)
	}
	if f := res.Failed(); len(f) != 0 {
		t.Fatalf("failed members: %+v", f)
	}
	for i, suffix := range []string{"cc-opus", "cc-sonnet", "codex"} {
		m := res.Members[i]
		branch := "try/" + res.Group + "/" + suffix
		wt := repo + "-try-" + res.Group + "-" + suffix
		if m.Suffix != suffix || m.Branch != branch || m.Worktree != wt || m.Cwd != filepath.Join(wt, "pkg") || m.Session == nil {
			t.Errorf("member %d = %+v", i, m)
			continue
		}
		if got := gitIn(t, m.Cwd, "rev-parse", "--abbrev-ref", "HEAD"); got != branch {
			t.Errorf("member %d worktree is on %s, want %s", i, got, branch)
		}
		if m.BaseRef == nil || m.BaseRef.Commit != head || m.BaseRef.Ref != "HEAD" {
			t.Errorf("member %d base = %+v", i, m.BaseRef)
		}
		want := []Stage{Queued, Creating, Starting, Started}
		if got := progress.stages[i]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("member %d stages = %v, want %v", i, got, want)
		}
	}
	byCwd := map[string]api.RunRequest{}
	for _, r := range st.reqs {
		byCwd[r.Cwd] = r
	}
	r := byCwd[res.Members[0].Cwd]
	if r.Adapter != "claude" || r.Model != "claude-opus-4-1" || r.Group != res.Group || r.Prompt != "fix it" || r.Name != "cmp-cc-opus" ||
		r.Labels["ticket"] != "42" || r.Labels[LabelBranch] != res.Members[0].Branch || r.Labels[LabelWorktree] != res.Members[0].Worktree ||
		r.Labels[LabelBaseCommit] != head || r.Labels[LabelBase] != "HEAD" || r.Labels[LabelMember] != "cc-opus" {
		t.Errorf("request of member 1 = %+v", r)
	}
	if strings.Join(r.Env, " ") != "A=1 PWD="+res.Members[0].Cwd {
		t.Errorf("member 1's environment = %q; want PWD set to its own folder", r.Env)
	}
	if len(tmpl.Labels) != 1 || tmpl.Env[1] != "PWD=/where/the/command/was/typed" {
		t.Errorf("the template's labels were changed: %v", tmpl.Labels)
	}

	// The same group again: every name is taken, so each gets -2.
	res2, err := Launch(ctx, st, Request{Group: res.Group, Repo: repo, Members: []Member{{Adapter: "codex"}, {Adapter: "pi"}}, Template: tmpl}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Members[0].Suffix != "codex-2" || res2.Members[1].Suffix != "pi" || res2.Members[0].Cwd != repo+"-try-"+res.Group+"-codex-2" {
		t.Errorf("second launch in the group: %+v", res2.Members)
	}
}

func TestLaunchMemberFailures(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	// A folder in the way of one member's worktree.
	blocker := WorktreePath(repo, "try/g-0000aa/opencode")
	if err := os.Mkdir(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &recordingStarter{}
	res, err := Launch(ctx, st, Request{
		Group: "g-0000aa",
		Repo:  repo,
		Members: []Member{
			{Adapter: "bogus"},
			{Adapter: "codex"},
			{Adapter: "pi", Base: "no-such-branch"},
			{Adapter: "opencode", Branch: "try/g-0000aa/opencode"},
		},
		Template: api.RunRequest{Prompt: "p"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := res.Failed()
	if len(failed) != 3 {
		t.Fatalf("failed = %+v, want bogus, pi and opencode", failed)
	}
	for _, want := range []struct{ adapter, msg string }{
		{"bogus", `unknown adapter "bogus"`},
		{"pi", `base branch "no-such-branch" not found`},
		{"opencode", "already exists and is not a worktree"},
	} {
		found := false
		for _, f := range failed {
			if f.Adapter == want.adapter {
				found = true
				if !strings.Contains(f.Error, want.msg) || f.Session != nil {
					t.Errorf("%s failed with %q, want %q", want.adapter, f.Error, want.msg)
				}
			}
		}
		if !found {
			t.Errorf("%s did not fail", want.adapter)
		}
	}
	if res.Members[1].Session == nil || len(st.reqs) != 1 || st.reqs[0].Adapter != "codex" {
		t.Errorf("codex did not start: %+v, requests %+v", res.Members[1], st.reqs)
	}
	// The member whose start failed leaves no worktree or branch behind;
	// the folder that was in the way is left alone.
	if res.Members[0].Worktree != "" || BranchExists(ctx, repo, "try/g-0000aa/bogus") {
		t.Errorf("the failed start left %q or its branch", res.Members[0].Worktree)
	}
	if _, err := os.Stat(WorktreePath(repo, "try/g-0000aa/bogus")); !os.IsNotExist(err) {
		t.Errorf("worktree of the failed start: %v", err)
	}
	if _, err := os.Stat(blocker); err != nil {
		t.Errorf("the folder in the way: %v", err)
	}
	if list, _ := ListWorktrees(ctx, repo); len(list) != 2 {
		t.Errorf("worktrees = %+v, want the main one and codex's", list)
	}
}

func TestLaunchRefusals(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	st := &recordingStarter{}
	two := []Member{{Adapter: "a"}, {Adapter: "b"}}
	for _, tt := range []struct {
		name string
		req  Request
		want string
	}{
		{"no members", Request{Repo: repo}, "no members"},
		{"bad group", Request{Repo: repo, Group: "a/b", Members: two}, `group "a/b"`},
		{"one branch for two", Request{Repo: repo, Branch: "x", Members: two}, "--branch names one branch, but there are 2 members"},
		{"same branch twice", Request{Repo: repo, Members: []Member{{Adapter: "a", Branch: "x"}, {Adapter: "b", Branch: "x"}}}, "members 1 and 2 both use branch x"},
		{"not a repository", Request{Repo: t.TempDir(), Members: two}, "is not in a git repository"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Launch(ctx, st, tt.req, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if len(st.reqs) != 0 {
		t.Errorf("refused launches started %d sessions", len(st.reqs))
	}
}

func TestLaunchWithoutWorktrees(t *testing.T) {
	st := &recordingStarter{}
	cwd := t.TempDir()
	res, err := Launch(context.Background(), st, Request{Group: "review-7", Members: []Member{{Adapter: "exec"}}, Template: api.RunRequest{Cwd: cwd, Command: []string{"true"}}}, nil)
	if err != nil || len(res.Failed()) != 0 {
		t.Fatalf("Launch = %+v, %v", res, err)
	}
	r := st.reqs[0]
	if r.Group != "review-7" || r.Cwd != cwd || r.Labels != nil || r.Command[0] != "true" || res.Members[0].Worktree != "" {
		t.Errorf("request = %+v, member = %+v", r, res.Members[0])
	}
}

// Many worktrees of one repository made at once, by two launches that do
// not share a lock (as two agentctl processes would): git must not trip
// over its own half-made worktrees.
func TestLaunchManyInParallel(t *testing.T) {
	repo := newRepo(t)
	var members []Member
	for i := range 6 {
		members = append(members, Member{Adapter: "pi", Model: fmt.Sprintf("m%d", i)})
	}
	st := &recordingStarter{}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = Launch(context.Background(), st, Request{Repo: repo, Members: members, Parallel: 6}, nil)
		}()
	}
	wg.Wait()
	for k := range 2 {
		if errs[k] != nil {
			t.Fatal(errs[k])
		}
		if f := results[k].Failed(); len(f) != 0 {
			t.Fatalf("launch %d: %d of 6 failed; first: %s", k, len(f), f[0].Error)
		}
	}
	list, err := ListWorktrees(context.Background(), repo)
	if err != nil || len(list) != 13 {
		t.Fatalf("%d worktrees, %v; want 13", len(list), err)
	}
	for _, w := range list[1:] {
		if n, err := Changes(context.Background(), w.Path); err != nil || n != 0 {
			t.Errorf("worktree %s: %d changes, %v; want a clean checkout", w.Path, n, err)
		}
	}
}

func TestLaunchCancelled(t *testing.T) {
	repo := newRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Launch(ctx, &recordingStarter{}, Request{Repo: repo, Members: []Member{{Adapter: "a"}}}, nil)
	if err == nil && (len(res.Failed()) != 1 || !strings.Contains(res.Members[0].Error, "canceled")) {
		t.Errorf("cancelled launch = %+v", res)
	}
}

func TestGroupStatus(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	st := &recordingStarter{}
	res, err := Launch(ctx, st, Request{Group: "g-0000bb", Repo: repo, Members: []Member{{Adapter: "a"}, {Adapter: "b"}}}, nil)
	if err != nil || len(res.Failed()) != 0 {
		t.Fatal(res, err)
	}
	writeFile(t, filepath.Join(res.Members[1].Worktree, "README.md"), []byte("hello\nmore\n"))
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	start := now.Add(-90 * time.Second)
	end := now.Add(-30 * time.Second)
	var sessions []api.Session
	for i, m := range res.Members {
		s := *m.Session
		s.CreatedAt, s.StartTime = start.Add(time.Duration(i)*time.Millisecond), &start
		s.Status = api.StatusRunning
		if i == 1 {
			s.Status, s.EndedAt = api.StatusExited, &end
		}
		sessions = append(sessions, s)
	}
	sessions = append(sessions, api.Session{ID: "plain", Status: api.StatusRunning, CreatedAt: now})
	if err := os.RemoveAll(res.Members[0].Worktree); err != nil {
		t.Fatal(err)
	}
	rows := GroupStatus(ctx, sessions, now)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0].Member != "a" || rows[0].Diff != nil || rows[0].DiffError != "worktree removed" || *rows[0].DurationS != 90 {
		t.Errorf("row a = %+v", rows[0])
	}
	if rows[1].Member != "b" || rows[1].Diff == nil || *rows[1].Diff != (DiffStat{Files: 1, Insertions: 1}) || *rows[1].DurationS != 60 || rows[1].Branch != "try/g-0000bb/b" {
		t.Errorf("row b = %+v diff %+v", rows[1], rows[1].Diff)
	}
	if rows[2].Diff != nil || !strings.Contains(rows[2].DiffError, "not started in a worktree") {
		t.Errorf("plain row = %+v", rows[2])
	}
}
