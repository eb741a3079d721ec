package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/registry"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
	"github.com/agentctl/agentctl/orchestrate"
)

// orchGit runs git in dir with an identity, for setting up test repositories.
func orchGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// orchRepo makes a git repository with one commit, alone in a temporary
// folder so the worktrees made next to it are removed with the test.
func orchRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP orchestration end-to-end: git is not installed")
	}
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(parent, "app")
	if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	orchGit(t, repo, "init", "-q", "-b", "main")
	for name, body := range map[string]string{"README.md": "app\n", "src/main.go": "package main\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orchGit(t, repo, "add", ".")
	orchGit(t, repo, "commit", "-q", "-m", "first")
	return repo
}

// groupResult runs a group launch and decodes its JSON, whatever the exit
// code.
func (e *Env) groupResult(args ...string) (orchestrate.Result, string, int) {
	e.T.Helper()
	out, errOut, code := e.Run(args...)
	var res orchestrate.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		e.T.Fatalf("agentctl %s: exit %d, stdout %q is not a group result: %v\nstderr: %s", strings.Join(args, " "), code, out, err, errOut)
	}
	return res, errOut, code
}

func (e *Env) groupStatus(group string) []orchestrate.MemberStatus {
	e.T.Helper()
	var st struct {
		Group   string                     `json:"group"`
		Members []orchestrate.MemberStatus `json:"members"`
	}
	e.JSON(&st, "group", "status", "--json", group)
	return st.Members
}

var groupIDRE = regexp.MustCompile(`^g-[0-9a-f]{6}$`)

// A group of plain commands, each in its own worktree; one member names an
// adapter that does not exist: the others start, the exit status and the
// output say which failed and why, and nothing is left of the failed one.
func TestGroupOfCommandsInWorktrees(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	repo := orchRepo(t)
	script := `pwd > where.txt; echo more >> ../README.md; echo ready > ready.txt; exec sleep 60`
	res, stderr, code := e.groupResult("run", "--json", "--worktree", filepath.Join(repo, "src"),
		"--adapter", "exec", "--adapter", "exec", "--adapter", "bogus", "-p", "compare",
		"--", "sh", "-c", script)
	if code != 1 {
		t.Errorf("exit code %d, want 1 (a member failed)", code)
	}
	if !strings.Contains(stderr, "1 of 3 members did not start") || !strings.Contains(stderr, `bogus: unknown adapter "bogus"`) {
		t.Errorf("stderr does not say which member failed and why:\n%s", stderr)
	}
	if !groupIDRE.MatchString(res.Group) || res.Repo != repo || len(res.Members) != 3 {
		t.Fatalf("group result = %+v", res)
	}
	g := res.Group
	for i, suffix := range []string{"exec-default", "exec-default-2"} {
		m := res.Members[i]
		wt := repo + "-try-" + g + "-" + suffix
		if m.Session == nil || m.Error != "" || m.Suffix != suffix || m.Branch != "try/"+g+"/"+suffix || m.Worktree != wt ||
			m.Cwd != filepath.Join(wt, "src") || m.Session.Group != g || m.Session.Cwd != m.Cwd || m.Session.Labels["worktree"] != wt {
			t.Errorf("member %d = %+v", i, m)
		}
	}
	bogus := res.Members[2]
	if bogus.Session != nil || !strings.Contains(bogus.Error, "unknown adapter") || bogus.Worktree != "" {
		t.Errorf("failed member = %+v", bogus)
	}
	if _, err := os.Stat(repo + "-try-" + g + "-bogus"); !os.IsNotExist(err) {
		t.Errorf("the failed member's worktree was left: %v", err)
	}
	if out := orchGit(t, repo, "branch", "--list", "try/*"); strings.Contains(out, "bogus") || strings.Count(out, "try/") != 2 {
		t.Errorf("branches = %q, want the two started members'", out)
	}

	for _, m := range res.Members[:2] {
		WaitFor(t, 20*time.Second, "the member to write its files", func() bool {
			_, err := os.Stat(filepath.Join(m.Cwd, "ready.txt"))
			return err == nil
		})
		if b, _ := os.ReadFile(filepath.Join(m.Cwd, "where.txt")); strings.TrimSpace(string(b)) != m.Cwd {
			t.Errorf("member ran in %q, want %s", b, m.Cwd)
		}
	}
	// list --group filters; the table shows the group.
	if l := e.Launched("--group", g); len(l) != 2 {
		t.Errorf("list --group = %d sessions, want 2", len(l))
	}
	if l := e.Launched("--group", "g-000000"); len(l) != 0 {
		t.Errorf("list --group of another group = %d sessions", len(l))
	}
	if out := e.MustRun("list"); !strings.Contains(out, "GROUP") || fieldCount(out, g) != 2 {
		t.Errorf("list table does not show the group:\n%s", out)
	}

	rows := e.groupStatus(g)
	if len(rows) != 2 {
		t.Fatalf("group status: %d rows", len(rows))
	}
	for _, r := range rows {
		// README.md +1, new src/where.txt and src/ready.txt.
		if r.Diff == nil || *r.Diff != (orchestrate.DiffStat{Files: 3, Insertions: 3, Untracked: 2}) || r.Session.Status != api.StatusRunning || r.DurationS == nil {
			t.Errorf("group status row = %+v (diff %+v)", r, r.Diff)
		}
	}
	table := e.MustRun("group", "status", g)
	if !strings.Contains(table, "3 files +3 -0") || !strings.Contains(table, "exec-default-2") || !strings.Contains(table, "2 running") {
		t.Errorf("group status table:\n%s", table)
	}

	// Cleaning up: refused while the session runs, then because of the
	// uncommitted changes, then done with --force.
	first := res.Members[0]
	out, errOut, code := e.Run("worktree", "clean", "--delete-branch", first.Worktree)
	if code != 1 || !strings.Contains(errOut, "a session runs in it: "+first.Session.ID) {
		t.Fatalf("clean while running: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(first.Worktree); err != nil {
		t.Fatalf("the refused clean removed the worktree: %v", err)
	}
	e.MustRun("stop", first.Session.ID)
	out, errOut, code = e.Run("worktree", "clean", "--delete-branch", first.Worktree)
	if code != 1 || !strings.Contains(errOut, "3 uncommitted changes would be lost") {
		t.Fatalf("clean with changes: exit %d\n%s%s", code, out, errOut)
	}
	out = e.MustRun("worktree", "clean", "--force", "--delete-branch", first.Worktree)
	if !strings.Contains(out, "removed worktree "+first.Worktree) || !strings.Contains(out, "deleted branch "+first.Branch) {
		t.Errorf("clean --force said:\n%s", out)
	}
	if _, err := os.Stat(first.Worktree); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	// The removed member still shows in the comparison, its diff unknown.
	var removed orchestrate.MemberStatus
	for _, r := range e.groupStatus(g) {
		if r.Session.ID == first.Session.ID {
			removed = r
		}
	}
	if removed.Diff != nil || removed.DiffError != "worktree removed" || removed.Session.Status != api.StatusKilled {
		t.Errorf("removed member's row = %+v", removed)
	}
	// worktree list shows the rest; the main working tree cannot be cleaned.
	var wtList struct {
		Worktrees []orchestrate.Worktree `json:"worktrees"`
	}
	e.JSON(&wtList, "worktree", "list", "--json", repo)
	wts := wtList.Worktrees
	if len(wts) != 2 || !wts[0].Main || wts[1].Path != res.Members[1].Worktree {
		t.Errorf("worktree list = %+v", wts)
	}
	if _, errOut, code := e.Run("worktree", "clean", repo); code != 1 || !strings.Contains(errOut, "main working tree") {
		t.Errorf("clean of the main working tree: exit %d %s", code, errOut)
	}
	// The whole group at once: the running member refuses, then goes.
	second := res.Members[1]
	if _, errOut, code := e.Run("worktree", "clean", "--group", g); code != 1 || !strings.Contains(errOut, "a session runs in it: "+second.Session.ID) {
		t.Errorf("clean --group while a member runs: exit %d %s", code, errOut)
	}
	e.MustRun("stop", second.Session.ID)
	out = e.MustRun("worktree", "clean", "--group", g, "--force", "--delete-branch")
	if !strings.Contains(out, "removed worktree "+second.Worktree) || !strings.Contains(out, "deleted branch "+second.Branch) {
		t.Errorf("clean --group said:\n%s", out)
	}
	if b := orchGit(t, repo, "branch", "--list", "try/*"); b != "" {
		t.Errorf("branches left: %q", b)
	}
	if out := e.MustRun("worktree", "clean", "--group", g); !strings.Contains(out, "no worktree left") {
		t.Errorf("clean --group of a cleaned group: %q", out)
	}
}

// A matrix file: its cwd relative to the file, its prompt, a list of models
// crossed with the adapter; an entry that fails; errors with line numbers.
func TestMatrixOfCommands(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	repo := orchRepo(t)
	dir := filepath.Dir(repo)
	mfile := filepath.Join(dir, "compare.yaml")
	matrix := "prompt: the task\ncwd: app\nmatrix:\n  - adapter: exec\n    model: [claude-opus-4-1, gpt-5.2-codex]\n  - adapter: bogus\n"
	if err := os.WriteFile(mfile, []byte(matrix), 0o644); err != nil {
		t.Fatal(err)
	}
	res, stderr, code := e.groupResult("run", "--json", "--matrix", mfile, "--", "sh", "-c", "git rev-parse --abbrev-ref HEAD > branch.txt")
	if code != 1 || !strings.Contains(stderr, "bogus") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if len(res.Members) != 3 || res.Repo != repo {
		t.Fatalf("matrix result = %+v", res)
	}
	for i, want := range []struct{ suffix, model string }{{"exec-opus", "claude-opus-4-1"}, {"exec-gpt5-codex", "gpt-5.2-codex"}} {
		m := res.Members[i]
		if m.Session == nil || m.Suffix != want.suffix || m.Model != want.model || m.Session.Model != want.model || m.Session.Prompt != "the task" {
			t.Errorf("member %d = %+v", i, m)
			continue
		}
		e.WaitStatus(m.Session.ID, api.StatusExited, 20*time.Second)
		if b, _ := os.ReadFile(filepath.Join(m.Cwd, "branch.txt")); strings.TrimSpace(string(b)) != m.Branch {
			t.Errorf("member %d ran on branch %q, want %s", i, b, m.Branch)
		}
	}
	rows := e.groupStatus(res.Group)
	if len(rows) != 2 {
		t.Fatalf("group status = %+v", rows)
	}
	for _, r := range rows {
		if want := map[string]string{"exec-opus": "claude-opus-4-1", "exec-gpt5-codex": "gpt-5.2-codex"}[r.Member]; r.Session.Model != want {
			t.Errorf("row %s has model %q, want %q", r.Member, r.Session.Model, want)
		}
		if r.Diff == nil || r.Diff.Untracked != 1 || r.Diff.Files != 1 {
			t.Errorf("row %s diff = %+v %s, want branch.txt", r.Member, r.Diff, r.DiffError)
		}
	}

	for _, tt := range []struct{ body, want string }{
		{"matrix:\n  - adapter: exec\n  - model: x\n", "compare.yaml:3:5: matrix entry 2 has no adapter"},
		{"matrix:\n  - adapter: exec\n    modle: x\n", `compare.yaml:3:5: matrix entry 1: unknown key "modle"`},
		{"prompt: [a\n", "compare.yaml:2: did not find expected ',' or ']'"},
	} {
		if err := os.WriteFile(mfile, []byte(tt.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := e.Run("run", "--matrix", mfile, "--", "true")
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("matrix %q: exit %d, stderr %q; want 2 and %q", tt.body, code, errOut, tt.want)
		}
	}
}

// One session in a worktree with a named branch; then sessions joining an
// existing group one at a time, as a hook would start them.
func TestRunInWorktreeAndJoinGroup(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	repo := orchRepo(t)
	var s api.Session
	cmd := e.Command("run", "--json", "--worktree", repo, "--branch", "fix/login", "--base-branch", "main", "--", "sh", "-c", "git rev-parse --abbrev-ref HEAD")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run --worktree: %v", err)
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("run --worktree printed %q: %v", out, err)
	}
	wt := repo + "-fix-login"
	if s.Cwd != wt || s.Labels["branch"] != "fix/login" || s.Labels["base"] != "main" || !groupIDRE.MatchString(s.Group) {
		t.Fatalf("session = %+v", s)
	}
	e.WaitStatus(s.ID, api.StatusExited, 20*time.Second)
	if logs := e.MustRun("logs", s.ID); !strings.Contains(logs, "fix/login") {
		t.Errorf("logs = %q", logs)
	}
	// The same branch again reuses its worktree.
	again := e.Start("--worktree", repo, "--branch", "fix/login", "--", "true")
	if again.Cwd != wt {
		t.Errorf("second run on fix/login ran in %s", again.Cwd)
	}

	g := "g-abc123"
	first := e.Start("--group", g, "--worktree", repo, "--", "true")
	second := e.Start("--group", g, "--worktree", repo, "--", "true")
	if first.Cwd != repo+"-try-g-abc123-exec" || second.Cwd != repo+"-try-g-abc123-exec-2" || second.Group != g {
		t.Errorf("members joining %s ran in %s and %s", g, first.Cwd, second.Cwd)
	}
	// A group without worktrees: just the tag.
	plain := e.Start("--group", g, "--cwd", repo, "--", "true")
	if plain.Group != g || plain.Cwd != repo {
		t.Errorf("plain group member = %+v", plain)
	}
	if l := e.Launched("-a", "--group", g); len(l) != 3 {
		t.Errorf("list -a --group %s = %d sessions, want 3", g, len(l))
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--branch", "x", "--", "true"}, "--branch and --base-branch need --worktree"},
		{[]string{"run", "--worktree", repo, "--cwd", repo, "--", "true"}, "--cwd and --worktree both say where to work"},
		{[]string{"run", "--group", "bad/name", "--", "true"}, `--group "bad/name"`},
		{[]string{"run", "--adapter", "exec", "--adapter", "exec", "--wait", "--worktree", repo, "--", "true"}, "--wait follows one session"},
		{[]string{"run", "--adapter", "exec", "--adapter", "exec", "--branch", "b", "--worktree", repo, "--", "true"}, "--branch names one branch, but there are 2 members"},
		{[]string{"launch", "--model", "m", "--adapter", "a", "--adapter", "b", "-p", "x"}, "--model must follow the --adapter it is for"},
		{[]string{"launch", "--adapter", "a", "--model", "m", "--model", "n", "-p", "x"}, "--model given twice for --adapter a"},
		{[]string{"launch", "pi", "--adapter", "codex", "-p", "x"}, "not both"},
		{[]string{"launch", "--adapter", "pi", "--adapter", "codex"}, "a group needs a prompt"},
		{[]string{"run", "--file", "x.md", "--", "true"}, "a plain command has none"},
		{[]string{"launch", "--adapter", "pi", "--adapter", "codex", "--worktree", t.TempDir(), "-p", "x"}, "is not in a git repository"},
	} {
		_, errOut, code := e.Run(tt.args...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("agentctl %s: exit %d, stderr %q; want an error with %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
	}
}

// Context files that cannot be used are refused before anything starts.
func TestContextFileErrors(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.md", []byte(strings.Repeat("a", 50<<10+1)))
	write("img.png", []byte("\x89PNG\r\n\x1a\n\x00\x00"))
	write("ok.md", []byte("fine\n"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--file", "missing.md"}, "--file: file not found: missing.md"},
		{[]string{"--spec", "missing.md"}, "--spec: file not found: missing.md"},
		{[]string{"--file", "big.md"}, "--file: big.md is 51201 bytes, over the limit of 50 KiB per file"},
		{[]string{"--file", "ok.md", "--max-file-size", "3"}, "ok.md is 5 bytes, over the limit of 3 bytes"},
		{[]string{"--file", "img.png"}, "img.png looks binary"},
		{[]string{"--file", "ok.md", "--max-file-size", "lots"}, "--max-file-size"},
	} {
		args := append([]string{"launch", "pi", "--cwd", dir, "-p", "x"}, tt.args...)
		_, errOut, code := e.Run(args...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, errOut, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.Home, "sessions")); err == nil {
		if ents, _ := os.ReadDir(filepath.Join(e.Home, "sessions")); len(ents) > 0 {
			t.Errorf("a refused launch left %d session folders", len(ents))
		}
	}
}

// realAgent is how one agent CLI is pointed at the fake model server.
type realAgent struct {
	adapter string
	bin     string
	models  []string
	setup   func(t *testing.T, e *Env, home, url string)
}

var realAgents = []realAgent{
	{adapter: "pi", bin: "pi", models: []string{"fakeopenai/fake-model", "fakeopenai/fake-model-2"},
		setup: func(t *testing.T, e *Env, home, url string) {
			orchWrite(t, filepath.Join(home, ".pi", "agent", "models.json"), fmt.Sprintf(`{"providers":{"fakeopenai":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"fake-key",
  "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"fake-model"},{"id":"fake-model-2"}]}}}`, url))
			e.Setenv("PI_OFFLINE", "1")
		}},
	{adapter: "claude", bin: "claude", models: []string{"fake-claude"},
		setup: func(t *testing.T, e *Env, home, url string) {
			e.Setenv("ANTHROPIC_BASE_URL", url)
			e.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
			e.Setenv("AGENTCTL_CLAUDE_USE_API_KEY", "1")
			e.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
			e.Setenv("DISABLE_AUTOUPDATER", "1")
		}},
	{adapter: "codex", bin: "codex", models: []string{"fake-model"},
		setup: func(t *testing.T, e *Env, home, url string) {
			orchWrite(t, filepath.Join(home, ".codex", "config.toml"), agenttest.CodexConfig(url))
			e.Setenv("CODEX_HOME", filepath.Join(home, ".codex"))
			e.Setenv("FAKE_API_KEY", "sk-fake")
		}},
	{adapter: "opencode", bin: "opencode", models: []string{"fake/fake-model"},
		setup: func(t *testing.T, e *Env, home, url string) {
			orchWrite(t, filepath.Join(home, ".config", "opencode", "opencode.json"), fmt.Sprintf(`{"model":"fake/fake-model","small_model":"fake/fake-model","autoupdate":false,"share":"disabled",
"provider":{"fake":{"npm":"@ai-sdk/openai-compatible","name":"Fake","options":{"baseURL":"%s/v1","apiKey":"sk-fake"},
"models":{"fake-model":{"name":"Fake Model","tool_call":true}}}}}`, url))
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			e.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
			e.Setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
			e.Setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
			e.Setenv("OPENCODE_DISABLE_SHARE", "1")
		}},
}

func orchWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentEnv is an installation whose agents talk to a fake model server:
// those whose adapter the service registers and whose CLI is installed.
// missing says, for each other agent, why it is left out.
func agentEnv(t *testing.T) (e *Env, srv *fakemodel.Server, have []realAgent, missing []string) {
	t.Helper()
	registered := map[string]bool{}
	for _, a := range registry.Local(t.TempDir(), func(string) string { return "" }, registry.Options{}) {
		if _, ok := a.(adapters.Launcher); ok {
			registered[a.Name()] = true
		}
	}
	binDir := agenttest.BinDir(t)
	for _, a := range realAgents {
		switch _, err := os.Stat(filepath.Join(binDir, a.bin)); {
		case !registered[a.adapter]:
			missing = append(missing, a.adapter+" (its adapter is not registered in adapters/registry)")
		case err != nil:
			missing = append(missing, a.adapter+" (not installed: scripts/install-agents.sh "+a.bin+")")
		default:
			have = append(have, a)
		}
	}
	if len(have) == 0 {
		t.Skipf("SKIP real-agent group: no agent usable: %s", strings.Join(missing, "; "))
	}
	srv = agenttest.FakeModel(t)
	e = NewEnv(t)
	home := t.TempDir()
	e.Setenv("HOME", home)
	e.Setenv("PATH", binDir+":"+os.Getenv("PATH"))
	for _, a := range have {
		a.setup(t, e, home, srv.URL())
	}
	return e, srv, have, missing
}

// waitMembers waits for every started member to end and checks it exited 0.
func waitMembers(t *testing.T, e *Env, res orchestrate.Result) {
	t.Helper()
	for _, m := range res.Members {
		if m.Session == nil {
			t.Errorf("member %s did not start: %s", m.Label(), m.Error)
			continue
		}
		var s api.Session
		WaitFor(t, 3*time.Minute, "member "+m.Suffix+" to end", func() bool {
			s = e.Session(m.Session.ID)
			return s.Status.Ended()
		})
		if s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != 0 {
			logs, _, _ := e.Run("logs", "-n", "40", s.ID)
			t.Errorf("member %s ended %s (code %v), want exited 0; logs:\n%s", m.Suffix, s.Status, s.ExitCode, logs)
		}
	}
}

// Real agents side by side: every usable agent plus a plain command in one
// group (run, as a hook would), each in its own worktree, the same prompt
// with a context file.
func TestRealAgentGroup(t *testing.T) {
	t.Parallel()
	e, srv, have, missing := agentEnv(t)
	repo := orchRepo(t)
	orchWrite(t, filepath.Join(repo, "TASK.md"), "marker-from-the-context-file\n")
	args := []string{"run", "--json", "--worktree", repo, "--file", "TASK.md", "-p", "do it [[bash: echo hello > hello.txt]]"}
	for _, a := range have {
		args = append(args, "--adapter", a.adapter, "--model", a.models[0])
	}
	args = append(args, "--adapter", "exec", "--", "sh", "-c", "echo hello > hello.txt")
	res, stderr, code := e.groupResult(args...)
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	if len(res.Members) != len(have)+1 {
		t.Fatalf("members = %+v", res.Members)
	}
	waitMembers(t, e, res)
	checkAgentGroup(t, e, srv, res.Group, len(have))
	if len(have) < 2 {
		t.Skipf("SKIP (partly covered: %s with a plain command): a group of several real agents needs two usable; missing: %s", have[0].adapter, strings.Join(missing, "; "))
	}
	if len(missing) > 0 {
		t.Logf("NOT COVERED: %s", strings.Join(missing, "; "))
	}
}

// checkAgentGroup checks group status after the agents ran: tokens known,
// and the file Pi's tool wrote in its worktree counted in its diff; the
// context file reached the model.
func checkAgentGroup(t *testing.T, e *Env, srv *fakemodel.Server, group string, agents int) {
	t.Helper()
	rows := e.groupStatus(group)
	if len(rows) < agents {
		t.Fatalf("group status: %d rows, want %d", len(rows), agents)
	}
	for _, r := range rows {
		t.Logf("member %s %s: %s tokens in %v out %v cost %v diff %+v %s", r.Member, r.Session.Adapter, r.Session.Status,
			deref(r.Session.TokensIn), deref(r.Session.TokensOut), r.Session.CostUSD, r.Diff, r.DiffError)
		if r.Session.Adapter == "exec" {
			continue
		}
		if r.Session.TokensIn == nil {
			t.Errorf("member %s (%s): no tokens after it ran (native id %q: did the adapter learn it? see daemon.log in the kept AGENTCTL_HOME)", r.Member, r.Session.Adapter, r.Session.NativeID)
		}
		if r.Session.Adapter == "pi" && (r.Diff == nil || r.Diff.Untracked != 1 || r.Diff.Insertions != 1) {
			t.Errorf("pi's diff = %+v (%s), want hello.txt", r.Diff, r.DiffError)
		}
	}
	seen := 0
	for _, req := range srv.Requests() {
		if strings.Contains(string(req.Body), "marker-from-the-context-file") && strings.Contains(string(req.Body), "--- File: TASK.md ---") {
			seen++
		}
	}
	if seen < agents {
		t.Errorf("the context file reached the model in %d requests, want at least %d", seen, agents)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A matrix of real agents: Pi with two models, each in its own worktree,
// with a prompt over 100 kB made of context files (it goes to the agent
// through a file or standard input, not argv).
func TestRealAgentMatrix(t *testing.T) {
	t.Parallel()
	e, srv, have, _ := agentEnv(t)
	var pi *realAgent
	for i := range have {
		if have[i].adapter == "pi" {
			pi = &have[i]
		}
	}
	if pi == nil {
		t.Skip("SKIP real-agent matrix: Pi is not usable (see TestRealAgentGroup's reasons)")
	}
	repo := orchRepo(t)
	var files []string
	for i := range 3 {
		name := fmt.Sprintf("part%d.txt", i)
		orchWrite(t, filepath.Join(repo, name), strings.Repeat(fmt.Sprintf("context line %d\n", i), 45<<10/15))
		files = append(files, "--file", name)
	}
	orchWrite(t, filepath.Join(repo, "compare.yaml"), fmt.Sprintf(`prompt: "compare [[bash: echo hello > hello.txt]]"
cwd: .
matrix:
  - adapter: pi
    model: [%s, %s]
`, pi.models[0], pi.models[1]))
	args := append([]string{"launch", "--json", "--matrix", filepath.Join(repo, "compare.yaml"), "--max-file-size", "64k"}, files...)
	res, stderr, code := e.groupResult(args...)
	if code != 0 {
		t.Fatalf("matrix launch exit %d: %s", code, stderr)
	}
	if len(res.Members) != 2 || res.Members[0].Suffix != "pi-model" || res.Members[1].Suffix != "pi-2" {
		t.Errorf("members: %+v", res.Members)
	}
	waitMembers(t, e, res)
	rows := e.groupStatus(res.Group)
	models := map[string]bool{}
	for _, r := range rows {
		models[r.Session.Model] = true
		if r.Diff == nil || r.Diff.Untracked != 1 {
			t.Errorf("member %s diff = %+v %s, want hello.txt", r.Member, r.Diff, r.DiffError)
		}
	}
	if !models[pi.models[0]] || !models[pi.models[1]] {
		t.Errorf("models in the group: %v", models)
	}
	big := 0
	for _, req := range srv.Requests() {
		if len(req.Body) > 100_000 && strings.Contains(string(req.Body), "--- File: part2.txt ---") {
			big++
		}
	}
	if big < 2 {
		t.Errorf("%d model requests carried the whole >100 kB prompt, want one per member at least", big)
	}
}

// Each member is locked to its own worktree: the members never collide, and
// another launch into a member's worktree is refused while it runs.
func TestGroupLocksPerWorktree(t *testing.T) {
	t.Parallel()
	e, _, have, _ := agentEnv(t)
	var pi *realAgent
	for i := range have {
		if have[i].adapter == "pi" {
			pi = &have[i]
		}
	}
	if pi == nil {
		t.Skip("SKIP group locks: Pi is not usable (see TestRealAgentGroup's reasons)")
	}
	if _, errOut, code := e.Run("locks", "--help"); code != 0 {
		t.Skipf("SKIP group locks: this agentctl has no 'locks' command yet (directory locks not wired): %s", strings.TrimSpace(errOut))
	}
	repo := orchRepo(t)
	res, stderr, code := e.groupResult("launch", "--json", "--worktree", repo, "-p", "hold [[sleep: 20]]",
		"--adapter", "pi", "--model", pi.models[0], "--adapter", "pi", "--model", pi.models[1])
	if code != 0 || len(res.Failed()) != 0 {
		t.Fatalf("group launch exit %d: %s", code, stderr)
	}
	out := e.MustRun("locks", "--json")
	var raw any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("locks --json printed %q: %v", out, err)
	}
	if obj, ok := raw.(map[string]any); ok {
		raw = obj["locks"]
	}
	held := map[string]string{} // directory → session
	list, _ := raw.([]any)
	for _, item := range list {
		l, _ := item.(map[string]any)
		dir, _ := l["directory"].(string)
		sid, _ := l["sessionId"].(string)
		if sid == "" {
			sid, _ = l["session_id"].(string)
		}
		held[dir] = sid
	}
	for _, m := range res.Members {
		if held[m.Cwd] != m.Session.ID {
			t.Errorf("member %s: its worktree %s is locked by %q, want its session %s (locks: %s)", m.Suffix, m.Cwd, held[m.Cwd], m.Session.ID, out)
		}
	}
	_, errOut, code := e.Run("launch", "pi", "--model", pi.models[0], "--cwd", res.Members[0].Cwd, "-p", "intrude")
	if code == 0 || !strings.Contains(errOut, res.Members[0].Session.ID) {
		t.Errorf("a launch into a member's worktree: exit %d, stderr %q; want it refused naming %s", code, errOut, res.Members[0].Session.ID)
	}
	for _, m := range res.Members {
		e.MustRun("stop", m.Session.ID)
	}
}
