package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Why a README line cannot run in a scratch home on any machine.
const (
	skipAgent    = "needs a logged-in agent CLI and its model account"
	skipWaiting  = "needs an agent session waiting for a person"
	skipSSH      = "reaches another host over ssh"
	skipTerminal = "needs a terminal: it attaches or draws the full screen"
	skipForever  = "runs until Ctrl-C"
	skipSystemd  = "installs or asks a systemd unit"
	skipGroup    = "acts on the group the agent launch above starts"
	skipCgroup   = "needs per-session cgroups (root, or a delegated systemd unit); e2e/cgroup_test.go runs it"
)

// readmeSkips are the README's agentctl lines (their command, comment
// left out) that TestREADMEExamples does not run, each with the reason.
// Every other line runs: a new example runs unless it is added here.
var readmeSkips = map[string]string{
	`agentctl run -it -- bash`: skipTerminal,
	`agentctl attach dev`:      skipTerminal,
	`agentctl top`:             skipTerminal,
	`agentctl list -w`:         skipForever,
	`agentctl web`:             skipForever,
	`agentctl run --name capped --memory-max 256M --cpus 1 --pids-max 200 -- make -j8`: skipCgroup,
	`agentctl status capped`:               skipCgroup,
	`agentctl service install`:             skipSystemd,
	`agentctl service status`:              skipSystemd,
	`agentctl launch codex -t`:             skipAgent,
	`agentctl peek fix`:                    skipAgent,
	`agentctl resume fix "now add a test"`: skipAgent,
	`agentctl launch claude -p "fix the flaky test" --cwd ~/src/app --name fix`:               skipAgent,
	`agentctl launch claude -i -p "clean up the build" --name tidy`:                           skipAgent,
	`agentctl launch --adapter claude --adapter codex -p "fix #123" --worktree . --group cmp`: skipAgent,
	`agentctl launch claude -p "review the diff" --permission-mode plan`:                      skipAgent,
	`agentctl launch codex -p "tidy the imports" -- --sandbox workspace-write`:                skipAgent,
	`agentctl launch codex -p "long refactor" --on-limit resume`:                              skipAgent,
	`agentctl approve tidy`:                               skipWaiting,
	`agentctl deny tidy --reason "not here"`:              skipWaiting,
	`agentctl answer tidy "use the staging db"`:           skipWaiting,
	`agentctl group status cmp`:                           skipGroup,
	`agentctl worktree clean --group cmp --delete-branch`: skipGroup,
	`agentctl events --type 'session.*' --since 10m`:      skipForever,
	`agentctl -H build run -- make test`:                  skipSSH,
	`agentctl list --hosts all`:                           skipSSH,
	`agentctl logs -f build/k3x9`:                         skipSSH,
}

// readmeWants are what some README lines must print, where the README
// says what they do: the example shows it, not only exits 0.
var readmeWants = map[string]string{
	`agentctl logs -f tests`: "ok (ci)", // --env-file .env reached it
	`agentctl wait tests`:    "0\n",
	`agentctl run --wait -- sh -c 'echo building; sleep 1; echo built'`: "built",
	`agentctl list -a --label team=ci --no-headers`:                     "exited(0)",
	`agentctl host ls --json`:                                           `"url": "ssh://me@build01"`,
}

// readmeLine is one line of a README sh block that runs agentctl.
type readmeLine struct {
	n int // line number in README.md
	// text is the line as a shell reads it; command is it without its
	// comment, the key of readmeSkips.
	text, command string
}

// runsAgentctl matches agentctl as a command word: at the start, after a
// pipe, a separator, $( or an assignment, not inside a path or file name.
var runsAgentctl = regexp.MustCompile(`(^|[\s;|&(])agentctl(\s|$)`)

// readmeCommands returns the lines of the file's ```sh blocks that run
// agentctl, in order; a line ending in a backslash continues on the next.
func readmeCommands(t *testing.T, path string) []readmeLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeLine
	inBlock := false
	var pending strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inBlock = strings.TrimSpace(line) == "```sh"
			continue
		}
		if !inBlock {
			continue
		}
		if pending.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(cont)
			continue
		}
		pending.WriteString(line)
		text := pending.String()
		pending.Reset()
		command := strings.TrimSpace(withoutComment(text))
		if runsAgentctl.MatchString(command) {
			out = append(out, readmeLine{n: start, text: text, command: command})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutComment cuts a shell line at its comment: a # that begins a word,
// outside quotes.
func withoutComment(line string) string {
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return line[:i]
		}
		prev = r
	}
	return line
}

// The README's examples run as written, in order, against a scratch home
// (the service started by the first of them), in a scratch directory
// holding the .env file they name. A runnable example that fails, or a
// skip entry the README no longer has, fails the test, so the examples
// cannot rot silently.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	lines := readmeCommands(t, "../README.md")
	e := NewEnv(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, ".env"), []byte("# what the examples read\nMODE=ci\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The binary under test is the agentctl the lines find first. A race
	// build sleeps a second at every exit by default (atexit_sleep_ms), which
	// over some thirty lines is most of the test's time.
	env := append(slices.Clone(e.Vars),
		"PATH="+filepath.Dir(e.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GORACE=atexit_sleep_ms=50 "+os.Getenv("GORACE"))
	skipped, wanted := map[string]bool{}, map[string]bool{}
	ran := 0
	for _, l := range lines {
		if why, ok := readmeSkips[l.command]; ok {
			skipped[l.command] = true
			t.Logf("README.md:%d not run (%s): %s", l.n, why, l.command)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "bash", "-c", l.text)
		cmd.Dir, cmd.Env = work, env
		// A line that leaves something holding its output is cut off
		// rather than hanging the test.
		cmd.WaitDelay = 5 * time.Second
		began := time.Now()
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("README.md:%d ran in %s: %s", l.n, time.Since(began).Round(time.Millisecond), l.command)
		ran++
		if err != nil {
			t.Errorf("README.md:%d: %s\n%v\n%s", l.n, l.text, err, out)
		}
		if want, ok := readmeWants[l.command]; ok {
			wanted[l.command] = true
			if !strings.Contains(string(out), want) {
				t.Errorf("README.md:%d: %s printed %q, want it to hold %q", l.n, l.text, out, want)
			}
		}
	}
	for command := range readmeWants {
		if !wanted[command] {
			t.Errorf("readmeWants names %q, which no README sh block runs any more", command)
		}
	}
	for command := range readmeSkips {
		if !skipped[command] {
			t.Errorf("readmeSkips names %q, which no README sh block has any more", command)
		}
	}
	// The README keeps its examples in sh blocks; none found means the
	// parser, not the README, went wrong.
	if ran < 20 {
		t.Errorf("ran %d README lines, want at least 20", ran)
	}
}
