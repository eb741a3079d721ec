package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/synth/claude"
)

// lockedBuffer collects a process's output that a test reads meanwhile.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// webServer is `agentctl web` running for a test.
type webServer struct {
	// URL is what it printed to open (with the token); Base the same
	// without it, ending in no slash.
	URL, Base, Token string
	Log              *lockedBuffer
	PID              int
}

// startWeb runs `agentctl web` on a free loopback port until the test ends.
func (e *Env) startWeb(t *testing.T) *webServer {
	t.Helper()
	cmd := e.Command("web", "--listen", "127.0.0.1:0")
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	var printed string
	select {
	case printed = <-line:
	case <-time.After(30 * time.Second):
		t.Fatalf("agentctl web printed no address in 30 s; its log:\n%s", logs.String())
	}
	u, ok := strings.CutPrefix(strings.TrimSpace(printed), "agentctl web: open ")
	base, token, found := strings.Cut(u, "/?token=")
	if !ok || !found {
		t.Fatalf("agentctl web printed %q, want an address with a token; its log:\n%s", printed, logs.String())
	}
	return &webServer{URL: u, Base: base, Token: token, Log: logs, PID: cmd.Process.Pid}
}

// browser starts the headless Chromium every browser test shares, or skips
// where none is installed (.ci/run installs Debian's).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("chromium is not installed")
	}
	// Without the background-networking flags Chromium's attempts to
	// reach its services pile up on a machine with no network.
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// do runs browser steps with a bound, failing the test on an error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval returns a JavaScript expression's value on the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is true on the page, and
// returns how long that took. A page that navigates meanwhile (a form
// posted) is waited on again.
func waitJS(t *testing.T, ctx context.Context, timeout time.Duration, what, expr string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			html, _ := chromedp.Run(rctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			cancel()
			t.Fatalf("waiting for %s (%s): not within %v; the page reads:\n%s", what, expr, timeout, html)
		}
		ctx2, cancel := context.WithTimeout(ctx, left+5*time.Second)
		_, err := chromedp.Run(ctx2, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(left), chromedp.WithPollingInterval(10*time.Millisecond)))
		cancel()
		if err == nil {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// insertText types text into the focused element as an input method
// would: one input event, where chromedp's key events would have xterm.js
// see each character twice (keydown and char).
func insertText(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: s})
		return err
	})
}

// termText is what a page's xterm.js shows, line by line.
const termText = `(() => { const t = window.agentctlTerm; if (!t) return ""; const b = t.buffer.active; let s = ""; for (let i = 0; i < b.length; i++) { const l = b.getLine(i); if (l) s += l.translateToString(true) + "\n"; } return s; })()`

// The dashboard in a real browser: the token leaves the address and the
// page; a session started from the CLI appears live; one that prints an OSC
// 9 notification moves to the top as waiting and is answered from the page
// (recorded as the web's); a bash session's terminal shows its screen and
// takes typing; stop from the page; a phone's viewport shows the waiting
// session and its buttons without scrolling sideways. Then the numbers over
// 1,000 sessions.
func TestWeb(t *testing.T) {
	ctx := browser(t)
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	w := e.startWeb(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agentctl web's log:\n%s", w.Log.String())
		}
	})

	do(t, ctx, "open the printed address", chromedp.Navigate(w.URL), chromedp.WaitReady(chromedp.ID("list")))
	if loc := eval[string](t, ctx, "location.href"); strings.Contains(loc, w.Token) || loc != w.Base+"/" {
		t.Fatalf("after the first load the address is %s, want %s/ (the token gone)", loc, w.Base)
	}
	if html := eval[string](t, ctx, "document.documentElement.outerHTML"); strings.Contains(html, w.Token) {
		t.Fatal("the page holds the token")
	}
	waitJS(t, ctx, 10*time.Second, "the live list to connect", "window.agentctlSnapshot >= 1")

	t.Run("a session started from the CLI appears", func(t *testing.T) {
		s := e.Start("--name", "sleeper", "--", "sleep", "600")
		took := waitJS(t, ctx, 10*time.Second, "the new session's row", fmt.Sprintf(`!!document.querySelector("#running #r-%s")`, s.ID))
		t.Logf("a session started from the CLI appeared on the page %v after the CLI returned", took.Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("the session appeared after %v, want within 1 s", took)
		}
	})

	var asker api.Session
	t.Run("a notification moves it to the top as waiting, answered from the page", func(t *testing.T) {
		asker = e.Start("--name", "asker", "--", "bash", "-c", `sleep 0.3; printf '\033]9;need you\007'; read -r line; echo "got $line"; sleep 600`)
		waitJS(t, ctx, 10*time.Second, "the session to wait", fmt.Sprintf(`(() => { const r = document.querySelector("main article.row"); return r && r.id === "r-%s" && r.closest("#waiting") && r.innerText.includes("need you"); })()`, asker.ID))
		field := chromedp.CSS(fmt.Sprintf(`#r-%s input[name=text]`, asker.ID))
		do(t, ctx, "answer it in its row",
			chromedp.Focus(field), insertText("from the web"),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`#r-%s .answer button`, asker.ID))),
			chromedp.WaitReady(chromedp.ID("list")))
		WaitFor(t, 10*time.Second, "the answer to reach the session", func() bool {
			out, _, _ := e.Run("logs", asker.ID)
			return strings.Contains(out, "got from the web")
		})
		b, err := os.ReadFile(filepath.Join(e.SessionDir(asker.ID), "decisions.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var rec api.DecisionRecord
		if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
			t.Fatalf("decisions.jsonl %q: %v", b, err)
		}
		if rec.Action != api.DecisionAnswer || rec.Text != "from the web" || !strings.HasPrefix(rec.Via, "web from 127.0.0.1:") || rec.PID == 0 {
			t.Fatalf("recorded %+v, want the answer, via the web from 127.0.0.1, with the web's pid", rec)
		}
	})

	t.Run("a phone shows the waiting session and its buttons", func(t *testing.T) {
		waiter := e.Start("--name", "needs-you", "--", "bash", "-c", `printf '\033]9;Allow edits to main.go?\007'; sleep 600`)
		done := e.Start("--name", "tests", "--", "sh", "-c", "echo ok")
		e.WaitStatus(done.ID, api.StatusExited, 20*time.Second)
		do(t, ctx, "a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
			chromedp.Navigate(w.Base+"/"), chromedp.WaitReady(chromedp.ID("list")))
		waitJS(t, ctx, 10*time.Second, "the waiting session's answer button", fmt.Sprintf(`!!document.querySelector("#waiting #r-%s .answer button")`, waiter.ID))
		fits := eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`)
		inView := eval[bool](t, ctx, fmt.Sprintf(`(() => { const b = document.querySelector("#r-%s .answer button").getBoundingClientRect(); return b.bottom <= window.innerHeight && b.right <= window.innerWidth && b.left >= 0; })()`, waiter.ID))
		if !fits || !inView {
			t.Fatalf("at 390×844: fits without sideways scrolling %v, the answer button in view %v (scrollWidth %v, innerWidth %v)", fits, inView,
				eval[int](t, ctx, "document.documentElement.scrollWidth"), eval[int](t, ctx, "window.innerWidth"))
		}
		if path := os.Getenv("AGENTCTL_WEB_SCREENSHOT"); path != "" {
			shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, shot, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		do(t, ctx, "back to a desktop", chromedp.EmulateViewport(1280, 900))
	})

	t.Run("the terminal shows a bash session's screen and takes typing", func(t *testing.T) {
		sh := e.Start("--name", "shell", "--", "env", "PS1=web$ ", "bash", "--norc", "--noprofile", "-i")
		e.MustRun("send", sh.ID, "echo before-$((2+3))")
		WaitFor(t, 10*time.Second, "bash to run the command", func() bool {
			out, _, _ := e.Run("logs", sh.ID)
			return strings.Contains(out, "before-5")
		})
		do(t, ctx, "open the terminal", chromedp.Navigate(w.Base+"/s/"+sh.ID+"/term"), chromedp.WaitReady(chromedp.CSS(".xterm-helper-textarea")))
		waitJS(t, ctx, 10*time.Second, "the screen replayed on join", termText+`.includes("before-5")`)
		do(t, ctx, "type into it", chromedp.Focus(chromedp.CSS(".xterm-helper-textarea")), insertText("echo typed-$((6*7))"), chromedp.KeyEvent("\r"))
		waitJS(t, ctx, 10*time.Second, "what was typed to run", termText+`.includes("typed-42")`)
		// An interactive bash ignores SIGTERM: the grace period is not
		// what this test is about.
		e.MustRun("stop", "--force", sh.ID)
	})

	t.Run("a session's page: live output, send, stop", func(t *testing.T) {
		s := e.Start("--name", "to-stop", "--", "bash", "-c", `printf '\033[32mfirst\033[0m\n'; read -r l; echo "second $l"; read -r m; echo "third $m"; sleep 600`)
		do(t, ctx, "open its page", chromedp.Navigate(w.Base+"/s/"+s.ID), chromedp.WaitReady(chromedp.ID("out")))
		waitJS(t, ctx, 10*time.Second, "its output, coloured", `!!document.querySelector("#out span.f2") && document.querySelector("#out").innerText.includes("first")`)
		field := chromedp.CSS(`form[action$="/send"] input[name=text]`)
		do(t, ctx, "send a line", chromedp.Focus(field), insertText("over the web"), chromedp.Click(chromedp.CSS(`form[action$="/send"] button`)), chromedp.WaitReady(chromedp.ID("out")))
		waitJS(t, ctx, 10*time.Second, "the answer to the line", `document.querySelector("#out").innerText.includes("second over the web")`)
		// Output written while the page is open comes to it live.
		eval[int](t, ctx, "window.samePage = 1")
		e.MustRun("send", s.ID, "from the cli")
		waitJS(t, ctx, 10*time.Second, "output followed live", `window.samePage === 1 && document.querySelector("#out").innerText.includes("third from the cli")`)
		do(t, ctx, "stop it from its page", chromedp.Click(chromedp.ID("stop")), chromedp.WaitReady(chromedp.ID("session")))
		WaitFor(t, 20*time.Second, "the session to end", func() bool { return e.Session(s.ID).Status.Ended() })
	})

	t.Run("launch from the form, restart from the page", func(t *testing.T) {
		do(t, ctx, "open the form", chromedp.Navigate(w.Base+"/new"), chromedp.WaitReady(chromedp.CSS(`form.launch`)),
			chromedp.SetValue(chromedp.CSS(`select[name=adapter]`), "exec"),
			chromedp.SetValue(chromedp.CSS(`input[name=command]`), "echo launched-from-$((40+2))"),
			chromedp.SetValue(chromedp.CSS(`input[name=cwd]`), t.TempDir()),
			chromedp.SetValue(chromedp.CSS(`input[name=group]`), "from-web"),
			chromedp.Click(chromedp.CSS(`form.launch button`)))
		waitJS(t, ctx, 10*time.Second, "the new session's page", `!!document.getElementById("session")`)
		first := eval[string](t, ctx, `document.getElementById("session").dataset.id`)
		WaitFor(t, 10*time.Second, "its output", func() bool {
			out, _, _ := e.Run("logs", first)
			return strings.Contains(out, "launched-from-42")
		})
		if s := e.Session(first); s.Group != "from-web" || s.Adapter != api.ExecAdapter {
			t.Fatalf("launched %+v, want a command in group from-web", s)
		}
		e.WaitStatus(first, api.StatusExited, 20*time.Second)
		do(t, ctx, "restart it", chromedp.Navigate(w.Base+"/s/"+first), chromedp.Click(chromedp.CSS(`form[action$="/restart"] button`)))
		waitJS(t, ctx, 10*time.Second, "the restart's page", fmt.Sprintf(`!!document.getElementById("session") && document.getElementById("session").dataset.id !== %q`, first))
		again := eval[string](t, ctx, `document.getElementById("session").dataset.id`)
		if s := e.Session(again); s.RestartOf != first {
			t.Fatalf("the restart %s is of %q, want %s", again, s.RestartOf, first)
		}
	})

	t.Run("the list reconnects without losing or doubling a row", func(t *testing.T) {
		do(t, ctx, "open the list", chromedp.Navigate(w.Base+"/"), chromedp.WaitReady(chromedp.ID("list")))
		waitJS(t, ctx, 10*time.Second, "the live list", "window.agentctlSnapshot >= 1")
		// The service restarts: the page's stream ends, and its next
		// one starts with a snapshot that has what began meanwhile.
		e.MustRun("daemon", "restart")
		s := e.Start("--name", "while-away", "--", "sleep", "600")
		waitJS(t, ctx, 20*time.Second, "the session started while the stream was down", fmt.Sprintf(`window.agentctlSnapshot >= 2 && !!document.querySelector("#r-%s")`, s.ID))
		ids := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("main article.row")).map(r => r.id)`)
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("row %s shows twice: %v", id, ids)
			}
			seen[id] = true
		}
		if want := len(e.Launched("-a")); len(ids) != want {
			t.Fatalf("the page shows %d rows, the service %d sessions", len(ids), want)
		}
	})

	t.Run("the token is in no log", func(t *testing.T) {
		daemonLog, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
		if strings.Contains(string(daemonLog), w.Token) || strings.Contains(w.Log.String(), w.Token) {
			t.Fatal("the token is in the service's or the web server's log")
		}
		if !strings.Contains(w.Log.String(), "web request") {
			t.Fatalf("the web server logged no request (the check proves nothing):\n%s", w.Log.String())
		}
	})

	t.Run("a real Claude Code permission approved from the page", func(t *testing.T) { webApproveClaude(t, ctx) })
	t.Run("1,000 sessions", func(t *testing.T) { webThousand(t, ctx) })
}

// webApproveClaude approves the permission an interactive Claude Code (its
// model the fake) asks for, with the Approve button of its row: the tool
// runs, its result reaches the model, and the decision is the web's.
func webApproveClaude(t *testing.T, ctx context.Context) {
	c, s, _ := claudeAttention(t, "touch web-approved && echo web-approved-output-7")
	w := c.startWeb(t)
	do(t, ctx, "open the dashboard", chromedp.Navigate(w.URL), chromedp.WaitReady(chromedp.ID("list")))
	button := chromedp.CSS(fmt.Sprintf(`#waiting #r-%s button[value=approve]`, s.ID))
	do(t, ctx, "approve", chromedp.WaitVisible(button), chromedp.Click(button), chromedp.WaitReady(chromedp.ID("list")))
	WaitFor(t, 60*time.Second, "the tool result at the fake model", func() bool {
		return strings.Contains(lastToolResult(c.srv), "web-approved-output-7")
	})
	b, err := os.ReadFile(filepath.Join(c.SessionDir(s.ID), "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec api.DecisionRecord
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		t.Fatalf("decisions.jsonl %q: %v", b, err)
	}
	if rec.Action != api.DecisionApprove || rec.Delivered != "hook" || rec.Tool != "Bash" || !strings.HasPrefix(rec.Via, "web from ") {
		t.Fatalf("recorded %+v, want an approval of Bash through the hook, via the web", rec)
	}
	c.MustRun("stop", "--force", s.ID)
}

// webThousand measures the list over 1,000 sessions (a synthetic Claude
// store) in the browser: the first paint of the list, and how long a
// change takes from the service to the page. The numbers go to the log.
func webThousand(t *testing.T, ctx context.Context) {
	if raceBuild {
		// A race build's service lists ten times slower: its numbers say
		// nothing, and the cold discovery alone takes a minute.
		t.Skip("timings need a build without -race: go test -run 'TestWeb$/1,000' ./e2e/")
	}
	e := NewEnv(t)
	var userHome string
	for _, kv := range e.Vars {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	if err := claude.GenerateStore(userHome, 1000, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(e.List("-a", "--since", "87600h").Sessions); n < 1000 {
		t.Fatalf("the store lists %d sessions, want 1,000", n)
	}
	listed := time.Now()
	e.List("-a", "--since", "87600h")
	t.Logf("agentctl list of 1,000 (warm): %v", time.Since(listed).Round(time.Millisecond))
	w := e.startWeb(t)
	do(t, ctx, "open the list of 1,000", chromedp.Navigate(w.URL+"&since=87600h"), chromedp.WaitReady(chromedp.ID("list")))
	do(t, ctx, "open it again", chromedp.Navigate(w.Base+"/?since=87600h"), chromedp.WaitReady(chromedp.ID("list")))
	rows := eval[int](t, ctx, `document.querySelectorAll("main article.row").length`)
	paint := eval[float64](t, ctx, `(() => { const p = performance.getEntriesByName("first-contentful-paint")[0]; return p ? p.startTime : -1; })()`)
	served := eval[float64](t, ctx, `performance.getEntriesByType("navigation")[0].responseEnd`)
	parsed := eval[float64](t, ctx, `performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd`)
	lcpCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	largest, err := chromedp.Run(lcpCtx, chromedp.Evaluate[float64](`new Promise(done => new PerformanceObserver(l => done(l.getEntries().at(-1).startTime)).observe({type: "largest-contentful-paint", buffered: true}))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("largest contentful paint: %v", err)
	}
	if rows < 1000 {
		t.Fatalf("the page lists %d sessions, want 1,000", rows)
	}
	waitJS(t, ctx, 20*time.Second, "the live list to connect", "window.agentctlSnapshot >= 1")
	var lags []float64
	for range 5 {
		s := e.Start("--", "sleep", "600")
		waitJS(t, ctx, 10*time.Second, "the new row", fmt.Sprintf(`(window.agentctlLags || []).some(l => l.id === %q)`, s.ID))
		lags = append(lags, eval[float64](t, ctx, fmt.Sprintf(`window.agentctlLags.filter(l => l.id === %q)[0].ms`, s.ID)))
	}
	for _, l := range strings.Split(w.Log.String(), "\n") {
		if strings.Contains(l, "path=/ ") {
			t.Log(l)
		}
	}
	t.Logf("1,000 sessions: %d rows; first contentful paint at %.0f ms, page served in %.0f ms, parsed at %.0f ms, largest contentful paint at %.0f ms; event to page (ms): %v", rows, paint, served, parsed, largest, lags)
	if paint < 0 {
		t.Error("the browser recorded no first paint")
	}

	// 20 more pages' live lists (the stream each page keeps open, read
	// as a browser would): the server's memory, before and after.
	before := rssKiB(t, w.PID)
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	var snapshots sync.WaitGroup
	for range 20 {
		req, err := http.NewRequestWithContext(sctx, http.MethodGet, w.Base+"/events?since=87600h", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.AddCookie(&http.Cookie{Name: "agentctl_web_" + w.Base[strings.LastIndex(w.Base, ":")+1:], Value: w.Token})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a page's stream: %s", resp.Status)
		}
		snapshots.Add(1)
		go func() {
			defer resp.Body.Close()
			r := bufio.NewReaderSize(resp.Body, 1<<20)
			first := true
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if first && strings.HasPrefix(line, "event: snapshot") {
					first = false
					snapshots.Done()
				}
			}
		}()
	}
	snapshots.Wait()
	for range 3 {
		e.Start("--", "sleep", "600")
	}
	after := rssKiB(t, w.PID)
	t.Logf("agentctl web's resident memory: %d KiB with one page, %d KiB with 21 pages' streams open", before, after)
}

// rssKiB is a process's resident memory.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var n int
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &n)
			return n
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}
