package orchestrate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir for a test, with an identity so commits work on any
// machine.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with one commit on main, in a folder of its
// own so worktrees made next to it stay inside the test's temp dir.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP: git is not installed; worktree tests need it")
	}
	parent := t.TempDir()
	repo := filepath.Join(parent, "app")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "README.md"), []byte("hello\n"))
	writeFile(t, filepath.Join(repo, "pkg/code.go"), []byte("package pkg\n\nfunc A() {}\n"))
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	// Resolve symbolic links (macOS /var → /private/var) the way git reports
	// paths.
	real, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func TestFindRepo(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	r, err := FindRepo(ctx, filepath.Join(repo, "pkg"))
	if err != nil || r.Root != repo || r.Prefix != "pkg" {
		t.Fatalf("FindRepo = %+v, %v; want root %s prefix pkg", r, err, repo)
	}
	if _, err := FindRepo(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not in a git repository") {
		t.Errorf("outside a repository: %v", err)
	}
	if _, err := FindRepo(ctx, filepath.Join(repo, "nope")); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("missing folder: %v", err)
	}
}

func TestResolveBase(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	head := gitIn(t, repo, "rev-parse", "HEAD")
	b, err := ResolveBase(ctx, repo, "")
	if err != nil || b.Commit != head || b.Ref != "HEAD" {
		t.Fatalf("ResolveBase(HEAD) = %+v, %v", b, err)
	}
	gitIn(t, repo, "branch", "dev")
	if b, err := ResolveBase(ctx, repo, "dev"); err != nil || b.Ref != "dev" || b.Commit != head {
		t.Errorf("local dev = %+v, %v", b, err)
	}
	if _, err := ResolveBase(ctx, repo, "nope"); err == nil || !strings.Contains(err.Error(), `base branch "nope" not found`) {
		t.Errorf("missing base: %v", err)
	}
	if _, err := ResolveBase(ctx, repo, "--upload-pack=x"); err == nil {
		t.Error("a base that looks like an option was accepted")
	}

	// With an origin, the base is origin's latest, fetched.
	origin := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, repo, "clone", "-q", "--bare", repo, origin)
	gitIn(t, repo, "remote", "add", "origin", origin)
	other := filepath.Join(t.TempDir(), "other")
	gitIn(t, repo, "clone", "-q", origin, other)
	writeFile(t, filepath.Join(other, "new.txt"), []byte("pushed later\n"))
	gitIn(t, other, "add", ".")
	gitIn(t, other, "commit", "-q", "-m", "later")
	gitIn(t, other, "push", "-q", "origin", "main")
	pushed := gitIn(t, other, "rev-parse", "HEAD")
	b, err = ResolveBase(ctx, repo, "main")
	if err != nil || b.Commit != pushed || b.Ref != "origin/main" {
		t.Fatalf("ResolveBase(main) with origin = %+v, %v; want %s", b, err, pushed)
	}
	gitIn(t, repo, "branch", "local-only")
	if _, err := ResolveBase(ctx, repo, "local-only"); err == nil || !strings.Contains(err.Error(), "fetch base branch origin/local-only") {
		t.Errorf("a base missing on origin: %v", err)
	}
}

func TestWorktreeLifecycle(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	head := gitIn(t, repo, "rev-parse", "HEAD")
	path := WorktreePath(repo, "try/g-000001/cc")
	reused, err := AddWorktree(ctx, repo, path, "try/g-000001/cc", head, nil)
	if err != nil || reused {
		t.Fatalf("AddWorktree = %v, %v", reused, err)
	}
	if br := gitIn(t, path, "rev-parse", "--abbrev-ref", "HEAD"); br != "try/g-000001/cc" {
		t.Errorf("worktree branch = %s", br)
	}
	if reused, err := AddWorktree(ctx, repo, path, "try/g-000001/cc", head, nil); err != nil || !reused {
		t.Errorf("second AddWorktree = %v, %v; want reused", reused, err)
	}
	plain := filepath.Join(filepath.Dir(repo), "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := AddWorktree(ctx, repo, plain, "x", head, nil); err == nil || !strings.Contains(err.Error(), "already exists and is not a worktree") {
		t.Errorf("AddWorktree on a plain folder: %v", err)
	}
	// An existing branch is checked out as it is.
	gitIn(t, repo, "branch", "feature")
	fpath := WorktreePath(repo, "feature")
	if _, err := AddWorktree(ctx, repo, fpath, "feature", "unused", nil); err != nil {
		t.Fatalf("AddWorktree of an existing branch: %v", err)
	}

	list, err := ListWorktrees(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || !list[0].Main || list[0].Path != repo || list[0].Branch != "main" {
		t.Fatalf("ListWorktrees = %+v", list)
	}
	found := false
	for _, w := range list[1:] {
		if w.Path == path {
			found = true
			if w.Branch != "try/g-000001/cc" || w.Head != head || w.Main {
				t.Errorf("worktree entry = %+v", w)
			}
		}
	}
	if !found {
		t.Errorf("ListWorktrees has no %s: %+v", path, list)
	}

	r, wt, err := WorktreeOf(ctx, filepath.Join(path, "pkg"))
	if err != nil || r != repo || wt.Branch != "try/g-000001/cc" {
		t.Fatalf("WorktreeOf = %s, %+v, %v", r, wt, err)
	}
	if _, _, err := WorktreeOf(ctx, repo); err == nil || !strings.Contains(err.Error(), "main working tree") {
		t.Errorf("WorktreeOf(main) = %v", err)
	}

	if n, err := Changes(ctx, path); err != nil || n != 0 {
		t.Errorf("Changes(clean) = %d, %v", n, err)
	}
	writeFile(t, filepath.Join(path, "README.md"), []byte("changed\n"))
	writeFile(t, filepath.Join(path, "new/a.txt"), []byte("a\n"))
	if n, err := Changes(ctx, path); err != nil || n != 2 {
		t.Errorf("Changes(dirty) = %d, %v; want 2", n, err)
	}
	if err := RemoveWorktree(ctx, repo, path, false); err == nil {
		t.Error("git removed a worktree with changes without force")
	}
	if err := RemoveWorktree(ctx, repo, path, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	c, err := DeleteBranch(ctx, repo, "try/g-000001/cc")
	if err != nil || c != head {
		t.Errorf("DeleteBranch = %s, %v", c, err)
	}
	if BranchExists(ctx, repo, "try/g-000001/cc") {
		t.Error("branch still exists")
	}
	if _, err := DeleteBranch(ctx, repo, "try/g-000001/cc"); err == nil {
		t.Error("deleting a missing branch gave no error")
	}
}

func TestParseWorktrees(t *testing.T) {
	out := "worktree /r\x00HEAD abc\x00branch refs/heads/main\x00\x00" +
		"worktree /r.git\x00bare\x00\x00" +
		"worktree /r-x\x00HEAD def\x00detached\x00locked reason here\x00prunable gitdir file points to non-existent location\x00\x00"
	got := parseWorktrees(out)
	if len(got) != 2 || got[0].Branch != "main" || !got[0].Main || got[1].Branch != "" || !got[1].Detached || !got[1].Locked || !got[1].Prunable || got[1].Main {
		t.Errorf("parseWorktrees = %+v", got)
	}
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	base := gitIn(t, repo, "rev-parse", "HEAD")
	path := WorktreePath(repo, "try/g-000002/codex")
	if _, err := AddWorktree(ctx, repo, path, "try/g-000002/codex", base, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := Diff(ctx, path, base); err != nil || d != (DiffStat{}) {
		t.Fatalf("Diff of a fresh worktree = %+v, %v", d, err)
	}
	// A commit, an unstaged edit, a staged new file, an untracked file, an
	// untracked binary, and an ignored file.
	writeFile(t, filepath.Join(path, "pkg/code.go"), []byte("package pkg\n\nfunc A() {}\n\nfunc B() {}\n"))
	gitIn(t, path, "commit", "-q", "-am", "add B")
	writeFile(t, filepath.Join(path, "README.md"), []byte("changed\n"))
	writeFile(t, filepath.Join(path, "staged.txt"), []byte("1\n2\n3\n"))
	gitIn(t, path, "add", "staged.txt")
	writeFile(t, filepath.Join(path, "notes/todo.md"), []byte("a\nb\nlast line without newline"))
	writeFile(t, filepath.Join(path, "blob.bin"), []byte{0, 1, 2, '\n'})
	writeFile(t, filepath.Join(path, ".gitignore"), []byte("*.log\n"))
	writeFile(t, filepath.Join(path, "build.log"), []byte("ignored\n"))
	d, err := Diff(ctx, path, base)
	if err != nil {
		t.Fatal(err)
	}
	// code.go +2, README.md +1 -1, staged.txt +3, todo.md +3, blob.bin +0,
	// .gitignore +1.
	want := DiffStat{Files: 6, Insertions: 10, Deletions: 1, Untracked: 3}
	if d != want {
		t.Errorf("Diff = %+v, want %+v", d, want)
	}
}
