package orchestrate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// git runs git in dir and returns its standard output. A failure says which
// command failed and what git printed.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// No credential prompt may block a launch; messages in one language so
	// they can be shown as they are.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		if errors.Is(err, exec.ErrNotFound) {
			msg = "git is not installed or not on PATH"
		}
		return out.String(), fmt.Errorf("git %s (in %s): %s", strings.Join(args, " "), dir, msg)
	}
	return out.String(), nil
}

// Repo is a git repository's main working tree as seen from a folder in it.
type Repo struct {
	// Root is the top of the working tree the folder is in.
	Root string
	// Prefix is the folder relative to Root ("" at the top).
	Prefix string
}

// FindRepo finds the working tree dir belongs to.
func FindRepo(ctx context.Context, dir string) (Repo, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Repo{}, fmt.Errorf("%s is not a directory", dir)
	}
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return Repo{}, fmt.Errorf("%s is not in a git repository (each member of a group works in a git worktree of it): %w", dir, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	r := Repo{Root: filepath.Clean(lines[0])}
	if len(lines) > 1 {
		r.Prefix = strings.TrimSuffix(lines[1], "/")
	}
	if r.Root == "" || r.Root == "." {
		return Repo{}, fmt.Errorf("%s is not inside a git working tree (a bare repository has none)", dir)
	}
	return r, nil
}

// Base is a resolved starting point for branches.
type Base struct {
	// Name is what was asked for ("main"), or "HEAD".
	Name string `json:"name"`
	// Ref is what was resolved: "origin/main", "main" or "HEAD".
	Ref string `json:"ref"`
	// Commit is the full commit id.
	Commit string `json:"commit"`
}

// ResolveBase finds the commit branches start from. No name: the
// repository's HEAD. A name with an "origin" remote: origin's latest (the
// branch is fetched first, so members start from what others pushed); a
// fetch that fails is an error rather than a silent start from a stale copy.
// Without an origin remote: the local branch, tag or commit of that name.
func ResolveBase(ctx context.Context, repo, name string) (Base, error) {
	if name == "" {
		c, err := revParse(ctx, repo, "HEAD")
		if err != nil {
			return Base{}, fmt.Errorf("%s has no commit to branch from (make a first commit): %w", repo, err)
		}
		return Base{Name: "HEAD", Ref: "HEAD", Commit: c}, nil
	}
	if strings.HasPrefix(name, "-") {
		return Base{}, fmt.Errorf("base branch %q: a name may not start with '-'", name)
	}
	if _, err := git(ctx, repo, "remote", "get-url", "origin"); err == nil {
		// An explicit refspec updates origin/<name> whatever the remote's
		// fetch configuration, and, unlike FETCH_HEAD, is not shared with
		// a concurrent fetch.
		spec := "+refs/heads/" + name + ":refs/remotes/origin/" + name
		if _, err := git(ctx, repo, "fetch", "--quiet", "--no-tags", "origin", spec); err != nil {
			return Base{}, fmt.Errorf("fetch base branch origin/%s (with an origin remote, the base is taken from it): %w", name, err)
		}
		c, err := revParse(ctx, repo, "refs/remotes/origin/"+name)
		if err != nil {
			return Base{}, fmt.Errorf("fetch base branch origin/%s: %w", name, err)
		}
		return Base{Name: name, Ref: "origin/" + name, Commit: c}, nil
	}
	c, err := revParse(ctx, repo, name)
	if err != nil {
		return Base{}, fmt.Errorf("base branch %q not found in %s (it has no origin remote to fetch it from)", name, repo)
	}
	return Base{Name: name, Ref: name, Commit: c}, nil
}

func revParse(ctx context.Context, repo, rev string) (string, error) {
	out, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// BranchExists reports whether the repository has a local branch of that name.
func BranchExists(ctx context.Context, repo, branch string) bool {
	_, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// branchesUnder lists the local branches whose names start with prefix.
func branchesUnder(ctx context.Context, repo, prefix string) (map[string]bool, error) {
	out, err := git(ctx, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+prefix)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			set[l] = true
		}
	}
	return set, nil
}

// AddWorktree makes a worktree for branch at path. A branch that does not
// exist yet is created at commit; one that exists is checked out as it is.
// A path that is already a worktree on that branch is reused (reused true);
// any other existing path is an error.
//
// git cannot register two worktrees of a repository at the same moment (it
// reads every worktree's files while one is half made), so registration
// holds register, and only the checkout of the files, the slow part, runs
// in parallel. A registration that trips over another process's is retried.
func AddWorktree(ctx context.Context, repo, path, branch, commit string, register sync.Locker) (reused bool, err error) {
	if _, err := os.Lstat(path); err == nil {
		cur, gerr := git(ctx, path, "rev-parse", "--abbrev-ref", "HEAD")
		if _, serr := os.Stat(filepath.Join(path, ".git")); serr == nil && gerr == nil && strings.TrimSpace(cur) == branch {
			return true, nil
		}
		return false, fmt.Errorf("%s already exists and is not a worktree on branch %s; remove it or choose another branch", path, branch)
	}
	if register == nil {
		register = &sync.Mutex{}
	}
	for attempt := 0; ; attempt++ {
		register.Lock()
		if BranchExists(ctx, repo, branch) {
			_, err = git(ctx, repo, "worktree", "add", "--quiet", "--no-checkout", path, branch)
		} else {
			_, err = git(ctx, repo, "worktree", "add", "--quiet", "--no-checkout", "-b", branch, path, commit)
		}
		register.Unlock()
		if err == nil || attempt == 4 || !strings.Contains(err.Error(), "/worktrees/") {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(50*(attempt+1)) * time.Millisecond):
		}
	}
	if err != nil {
		return false, err
	}
	if _, err := git(ctx, path, "reset", "--hard", "--quiet"); err != nil {
		return false, fmt.Errorf("check out the files: %w", err)
	}
	return false, nil
}

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Path     string `json:"path"`
	Branch   string `json:"branch,omitempty"` // short name; empty when detached
	Head     string `json:"head,omitempty"`
	Bare     bool   `json:"bare,omitempty"`
	Detached bool   `json:"detached,omitempty"`
	Locked   bool   `json:"locked,omitempty"`
	Prunable bool   `json:"prunable,omitempty"`
	// Main is the repository's main working tree.
	Main bool `json:"main,omitempty"`
}

// ListWorktrees lists a repository's worktrees, the main one first, bare
// entries left out.
func ListWorktrees(ctx context.Context, repo string) ([]Worktree, error) {
	out, err := git(ctx, repo, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("list worktrees of %s: %w", repo, err)
	}
	return parseWorktrees(out), nil
}

// parseWorktrees reads `git worktree list --porcelain -z`: attribute lines
// ended by NUL, entries separated by an empty one.
func parseWorktrees(out string) []Worktree {
	var list []Worktree
	var cur *Worktree
	flush := func() {
		if cur != nil && !cur.Bare {
			list = append(list, *cur)
		}
		cur = nil
	}
	for _, field := range strings.Split(out, "\x00") {
		if field == "" {
			flush()
			continue
		}
		k, v, _ := strings.Cut(field, " ")
		if k == "worktree" {
			flush()
			cur = &Worktree{Path: v, Main: len(list) == 0}
			continue
		}
		if cur == nil {
			continue
		}
		switch k {
		case "HEAD":
			cur.Head = v
		case "branch":
			cur.Branch = strings.TrimPrefix(v, "refs/heads/")
		case "bare":
			cur.Bare = true
		case "detached":
			cur.Detached = true
		case "locked":
			cur.Locked = true
		case "prunable":
			cur.Prunable = true
		}
	}
	flush()
	return list
}

// WorktreeOf describes the linked worktree at path: its repository's main
// working tree and its branch. The main working tree itself is refused:
// removing it is not what a worktree clean is for.
func WorktreeOf(ctx context.Context, path string) (repo string, wt Worktree, err error) {
	if st, serr := os.Stat(path); serr != nil || !st.IsDir() {
		return "", Worktree{}, fmt.Errorf("%s is not a directory", path)
	}
	top, err := git(ctx, path, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", Worktree{}, fmt.Errorf("%s is not a git worktree: %w", path, err)
	}
	top = filepath.Clean(strings.TrimSpace(top))
	list, err := ListWorktrees(ctx, top)
	if err != nil {
		return "", Worktree{}, err
	}
	if len(list) == 0 {
		return "", Worktree{}, fmt.Errorf("git lists no worktrees for %s", path)
	}
	for _, w := range list {
		if samePath(w.Path, top) {
			if w.Main {
				return "", Worktree{}, fmt.Errorf("%s is the main working tree of its repository, not a linked worktree", top)
			}
			return list[0].Path, w, nil
		}
	}
	return "", Worktree{}, fmt.Errorf("%s is not listed among the worktrees of %s", top, list[0].Path)
}

// samePath compares two paths after resolving symbolic links.
func samePath(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// Changes counts what `git status` shows in a worktree: modified, staged and
// untracked (not ignored) paths.
func Changes(ctx context.Context, path string) (int, error) {
	out, err := git(ctx, path, "status", "--porcelain", "-z", "--untracked-files=all")
	if err != nil {
		return 0, err
	}
	n := 0
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 3 {
			continue
		}
		n++
		if f[0] == 'R' || f[0] == 'C' {
			i++ // a rename's second field is its source
		}
	}
	return n, nil
}

// RemoveWorktree removes a linked worktree; force removes one with changes.
func RemoveWorktree(ctx context.Context, repo, path string, force bool) error {
	args := []string{"worktree", "remove"}
	if force {
		// Twice: also a locked worktree.
		args = append(args, "--force", "--force")
	}
	_, err := git(ctx, repo, append(args, "--", path)...)
	return err
}

// DeleteBranch deletes a local branch whatever its merge state, and returns
// the commit it pointed to so it can be recovered.
func DeleteBranch(ctx context.Context, repo, branch string) (string, error) {
	c, err := revParse(ctx, repo, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("branch %s not found in %s", branch, repo)
	}
	if _, err := git(ctx, repo, "branch", "-D", "--", branch); err != nil {
		return "", err
	}
	return c, nil
}

// DiffStat is the size of a worktree's changes against its base: committed,
// staged, unstaged, and new files not ignored.
type DiffStat struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
	// Untracked counts the new files among Files (their lines are in
	// Insertions).
	Untracked int `json:"untracked"`
}

// Diff measures the worktree at path against commit.
func Diff(ctx context.Context, path, commit string) (DiffStat, error) {
	var d DiffStat
	out, err := git(ctx, path, "diff", "--numstat", "-z", "--no-renames", "--end-of-options", commit, "--")
	if err != nil {
		return d, err
	}
	for _, rec := range strings.Split(out, "\x00") {
		fields := strings.SplitN(rec, "\t", 3)
		if len(fields) < 3 {
			continue
		}
		d.Files++
		// Binary files show "-" for both counts.
		if n, err := strconv.Atoi(fields[0]); err == nil {
			d.Insertions += n
		}
		if n, err := strconv.Atoi(fields[1]); err == nil {
			d.Deletions += n
		}
	}
	out, err = git(ctx, path, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return d, err
	}
	for _, f := range strings.Split(out, "\x00") {
		if f == "" {
			continue
		}
		d.Files++
		d.Untracked++
		d.Insertions += textLines(filepath.Join(path, f))
	}
	return d, nil
}

// textLines counts a text file's lines the way git diff does (a last line
// without a newline counts); binary or unreadable files count none.
func textLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	n, last := 0, byte('\n')
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		chunk := buf[:k]
		if bytes.IndexByte(chunk, 0) >= 0 {
			return 0
		}
		n += bytes.Count(chunk, []byte{'\n'})
		if k > 0 {
			last = chunk[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0
		}
	}
	if last != '\n' {
		n++
	}
	return n
}
