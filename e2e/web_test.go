package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
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

// startWeb runs `agentctl web` on a free loopback port, with more flags,
// until the test ends.
func (e *Env) startWeb(t *testing.T, flags ...string) *webServer {
	t.Helper()
	cmd := e.Command(append([]string{"web", "--listen", "127.0.0.1:0"}, flags...)...)
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

// background sets the colour a page without its own is drawn on (nil:
// the browser's again).
func background(c *cdp.RGBA) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetDefaultBackgroundColorOverride, emulation.SetDefaultBackgroundColorOverrideParams{Color: c})
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

	// The home-screen PNG icon (iOS takes no SVG) is the SVG as the
	// browser draws it at 180×180, written with AGENTCTL_WEB_ICON=PATH
	// (web/assets/icon-180.png).
	if path := os.Getenv("AGENTCTL_WEB_ICON"); path != "" {
		t.Run("the touch icon drawn from the SVG", func(t *testing.T) {
			do(t, ctx, "draw the icon", chromedp.EmulateViewport(180, 180, chromedp.EmulateScale(1)),
				background(&cdp.RGBA{R: 0x16, G: 0x1b, B: 0x22, A: 1}),
				chromedp.Navigate(w.Base+"/assets/icon.svg"))
			shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			do(t, ctx, "back to a desktop", background(nil), chromedp.EmulateViewport(1280, 900))
		})
	}

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
	// The turn ends (and with it the user's own Stop hook, which
	// claudeAttention checks) before the stop: a stop at once raced it.
	WaitFor(t, 30*time.Second, "the turn to end at the prompt", func() bool {
		got := c.Session(s.ID)
		return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingInput
	})
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

// webHTTP is a browser's requests without a browser: the token's cookie,
// and the Origin of the dashboard on every request.
type webHTTP struct {
	base, token string
	hc          *http.Client
}

func newWebHTTP(base, token string) *webHTTP {
	return &webHTTP{base: base, token: token, hc: &http.Client{
		Timeout:       60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends one request (a form posts) and returns its status and body.
func (w *webHTTP) do(t *testing.T, method, path string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, w.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Origin", w.base)
	req.AddCookie(&http.Cookie{Name: "agentctl_web_" + w.base[strings.LastIndex(w.base, ":")+1:], Value: w.token})
	resp, err := w.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseStream is a page's server-sent events, read as they come.
type sseStream struct {
	events chan [2]string // event, data
}

// stream opens a page's event stream for the rest of the test.
func (w *webHTTP) stream(t *testing.T, path string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", w.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "agentctl_web_" + w.base[strings.LastIndex(w.base, ":")+1:], Value: w.token})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	s := &sseStream{events: make(chan [2]string, 1024)}
	go func() {
		defer resp.Body.Close()
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		var event string
		for sc.Scan() {
			switch l := sc.Text(); {
			case strings.HasPrefix(l, "event: "):
				event = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				select {
				case s.events <- [2]string{event, strings.TrimPrefix(l, "data: ")}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return s
}

// wait reads events until match takes one.
func (s *sseStream) wait(t *testing.T, what string, match func(event, data string) bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("waiting for %s: the stream ended", what)
			}
			if match(ev[0], ev[1]) {
				return
			}
		case <-timeout:
			t.Fatalf("waiting for %s: not within 20 s", what)
		}
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// answer posts an answer to a waiting session from its page, as its form
// does, and fails unless the dashboard took it.
func (w *webHTTP) answer(t *testing.T, handle, text string) {
	t.Helper()
	code, page := w.do(t, "GET", "/s/"+handle, nil)
	m := csrfField.FindStringSubmatch(page)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET /s/%s: %d, no form:\n%s", handle, code, page)
	}
	if code, page := w.do(t, "POST", "/s/"+handle+"/answer", url.Values{"csrf": {m[1]}, "text": {text}}); code != http.StatusSeeOther {
		t.Fatalf("answer %s: %d:\n%s", handle, code, page)
	}
}

// lastDecision is the last line of a session's decisions.jsonl.
func lastDecision(t *testing.T, dir string) api.DecisionRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var rec api.DecisionRecord
	if err := json.Unmarshal(lines[len(lines)-1], &rec); err != nil {
		t.Fatalf("decisions.jsonl %q: %v", b, err)
	}
	return rec
}

// asking is a command that asks for a person (an OSC 9 notification) and
// echoes the answer it reads.
const asking = `printf '\033]9;need you\007'; read -r line; echo "got $line"; sleep 600`

// The service serves the dashboard while it runs when config.json says
// "web": daemon status says where (never the token), agentctl web prints
// the address to open and exits, an answer through it is recorded as the
// web's with the service as the proven caller, it stops with the service,
// and a bind it refuses is a logged, shown error while the service runs on.
func TestWebInService(t *testing.T) {
	e := NewEnv(t)
	config := func(s string) {
		if err := os.WriteFile(filepath.Join(e.Home, "config.json"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config(`{"web": {"listen": "127.0.0.1:0"}}`)
	e.MustRun("daemon", "start")
	var st api.DaemonStatus
	e.JSON(&st, "daemon", "status", "--json")
	if st.Web == nil || !strings.HasPrefix(st.Web.URL, "http://127.0.0.1:") || st.Web.Error != "" {
		t.Fatalf("daemon status --json says of the dashboard %+v, want where it serves", st.Web)
	}
	base := strings.TrimSuffix(st.Web.URL, "/")
	if text := e.MustRun("daemon", "status"); !strings.Contains(text, "web      "+st.Web.URL) {
		t.Fatalf("daemon status does not say where the dashboard is:\n%s", text)
	}
	tok, err := os.ReadFile(filepath.Join(e.Home, "web.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	if out := strings.TrimSpace(e.MustRun("web")); out != "agentctl web: the service serves the dashboard: open "+st.Web.URL+"?token="+token {
		t.Fatalf("agentctl web with the service's dashboard on printed %q", out)
	}
	if out := strings.TrimSpace(e.MustRun("web", "--url")); out != st.Web.URL+"?token="+token {
		t.Fatalf("agentctl web --url printed %q", out)
	}

	w := newWebHTTP(base, token)
	if code, page := w.do(t, "GET", "/", nil); code != http.StatusOK || !strings.Contains(page, `id="list"`) {
		t.Fatalf("the service's dashboard: %d:\n%s", code, page)
	}
	s := e.Start("--name", "asker", "--", "bash", "-c", asking)
	WaitFor(t, 10*time.Second, "the session to wait", func() bool { return e.Session(s.ID).Activity == api.ActivityWaiting })
	w.answer(t, s.ID, "from the service")
	WaitFor(t, 10*time.Second, "the answer to reach the session", func() bool {
		out, _, _ := e.Run("logs", s.ID)
		return strings.Contains(out, "got from the service")
	})
	if rec := lastDecision(t, e.SessionDir(s.ID)); !strings.HasPrefix(rec.Via, "web from 127.0.0.1:") || rec.PID != st.PID || rec.Text != "from the service" {
		t.Fatalf("recorded %+v, want the answer via the web from 127.0.0.1, by the service (pid %d)", rec, st.PID)
	}
	daemonLog, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
	if !strings.Contains(string(daemonLog), "web dashboard served") || !strings.Contains(string(daemonLog), "web request") {
		t.Fatalf("the service's log does not have the dashboard and its requests (the check below proves nothing):\n%s", daemonLog)
	}
	for _, text := range []string{e.MustRun("daemon", "status"), e.MustRun("daemon", "status", "--json"), string(daemonLog)} {
		if strings.Contains(text, token) {
			t.Fatalf("the token is in the service's status or log:\n%s", text)
		}
	}

	// It stops with the service.
	e.MustRun("daemon", "stop")
	if resp, err := http.Get(st.Web.URL); err == nil {
		resp.Body.Close()
		t.Fatalf("the dashboard answers after the service stopped: %s", resp.Status)
	}

	// Beyond loopback without TLS and expose: refused, said, and the
	// service serves the rest.
	config(`{"web": {"listen": "0.0.0.0:0"}}`)
	e.MustRun("daemon", "start")
	st = api.DaemonStatus{}
	e.JSON(&st, "daemon", "status", "--json")
	if st.Web == nil || st.Web.URL != "" || !strings.Contains(st.Web.Error, `"listen" 0.0.0.0:0 is not a loopback address`) {
		t.Fatalf("daemon status --json says of a refused dashboard %+v, want why", st.Web)
	}
	if log, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log")); !strings.Contains(string(log), "web dashboard not served") {
		t.Fatalf("the service's log does not say the dashboard is refused:\n%s", log)
	}
	if text := e.MustRun("daemon", "status"); !strings.Contains(text, "web      not served: ") {
		t.Fatalf("daemon status does not say the dashboard is not served:\n%s", text)
	}
	if e.Session(s.ID).Status != api.StatusRunning {
		t.Fatal("the service without its dashboard does not answer")
	}
	if _, stderr, code := e.Run("web", "--url"); code == 0 || !strings.Contains(stderr, "does not serve the dashboard") {
		t.Fatalf("agentctl web --url with no dashboard served: exit %d, %q", code, stderr)
	}

	// A port already taken: the same.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	config(fmt.Sprintf(`{"web": {"listen": %q}}`, taken.Addr().String()))
	e.MustRun("daemon", "restart")
	st = api.DaemonStatus{}
	e.JSON(&st, "daemon", "status", "--json")
	if st.Web == nil || st.Web.URL != "" || !strings.Contains(st.Web.Error, "address already in use") {
		t.Fatalf("daemon status --json says of a dashboard on a taken port %+v, want why", st.Web)
	}
	if e.Session(s.ID).Status != api.StatusRunning {
		t.Fatal("the service without its dashboard does not answer")
	}
}

// agentctl web --hosts: the sessions of this machine and of another home
// (a unix:// host) in one list, each naming its host; a session's page by
// its HOST/ID handle; its answer and stop sent to its host; and a host that
// stops answering is a warning on a page that still renders.
func TestWebHosts(t *testing.T) {
	e, b := NewEnv(t), NewEnv(t)
	e.MustRun("daemon", "start")
	b.MustRun("daemon", "start")
	e.MustRun("host", "add", "b", "unix://"+b.Home)
	// A stopped host stays stopped (its client would start it again).
	e.Setenv("AGENTCTL_NO_AUTOSTART", "1")
	mine := e.Start("--name", "mine", "--", "sleep", "600")
	theirs := b.Start("--name", "theirs", "--", "bash", "-c", asking)
	WaitFor(t, 10*time.Second, "b's session to wait", func() bool { return b.Session(theirs.ID).Activity == api.ActivityWaiting })

	ws := e.startWeb(t, "--hosts", "all")
	w := newWebHTTP(ws.Base, ws.Token)
	code, page := w.do(t, "GET", "/", nil)
	for _, want := range []string{`id="r-local/` + mine.ID + `"`, `id="r-b/` + theirs.ID + `"`, `<span class="tag host">b</span>`, `<span class="tag host">local</span>`, `href="/s/b/` + theirs.ID + `"`} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Fatalf("the list over both hosts: %d, no %s:\n%s", code, want, page)
		}
	}
	if i, j := strings.Index(page, `id="waiting"`), strings.Index(page, `id="r-b/`+theirs.ID); j < i || j > strings.Index(page, `id="running"`) {
		t.Fatalf("b's waiting session is not under Needs you:\n%s", page)
	}
	if code, page := w.do(t, "GET", "/s/b/"+theirs.ID, nil); code != http.StatusOK || !strings.Contains(page, `data-id="b/`+theirs.ID+`"`) {
		t.Fatalf("b's session's page: %d:\n%s", code, page)
	}

	// The live list follows both hosts: a session started on b arrives
	// as its row, by its handle.
	rows := w.stream(t, "/events")
	later := b.Start("--name", "later", "--", "sleep", "600")
	rows.wait(t, "b's new session's row", func(event, data string) bool {
		return event == "row" && strings.Contains(data, `"id":"b/`+later.ID+`"`) && strings.Contains(data, `tag host\"\u003eb\u003c`)
	})

	w.answer(t, "b/"+theirs.ID, "from the hosts' web")
	WaitFor(t, 10*time.Second, "the answer to reach b's session", func() bool {
		out, _, _ := b.Run("logs", theirs.ID)
		return strings.Contains(out, "got from the hosts' web")
	})
	if rec := lastDecision(t, b.SessionDir(theirs.ID)); !strings.HasPrefix(rec.Via, "web from 127.0.0.1:") || rec.PID != ws.PID {
		t.Fatalf("b recorded %+v, want the answer via the web, by agentctl web (pid %d)", rec, ws.PID)
	}
	_, page = w.do(t, "GET", "/s/b/"+theirs.ID, nil)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("b's session's page has no form:\n%s", page)
	}
	if code, page := w.do(t, "POST", "/s/b/"+theirs.ID+"/stop", url.Values{"csrf": {m[1]}, "force": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("stop b's session: %d:\n%s", code, page)
	}
	WaitFor(t, 20*time.Second, "b's session to end", func() bool { return b.Session(theirs.ID).Status.Ended() })
	if s := e.Session(mine.ID); s.Status != api.StatusRunning {
		t.Fatalf("stopping b's session touched this machine's: %s", s.Status)
	}

	// The launch form asks on which host: a session started there is b's.
	if code, page := w.do(t, "GET", "/new", nil); code != http.StatusOK || !strings.Contains(page, `<select name="host"><option>local</option><option>b</option></select>`) {
		t.Fatalf("the launch form over both hosts: %d, no choice of host:\n%s", code, page)
	}
	code, page = w.do(t, "POST", "/new", url.Values{"csrf": {m[1]}, "host": {"b"}, "adapter": {api.ExecAdapter}, "command": {"sleep 600"}, "name": {"from-the-form"}})
	if code != http.StatusSeeOther {
		t.Fatalf("launch on b from the form: %d:\n%s", code, page)
	}
	var started api.Session
	WaitFor(t, 10*time.Second, "the session started from the form on b", func() bool {
		for _, l := range b.Launched() {
			if l.Name == "from-the-form" {
				started = l
				return true
			}
		}
		return false
	})
	if started.Status != api.StatusRunning {
		t.Fatalf("the session started from the form on b: %+v", started)
	}

	b.MustRun("daemon", "stop")
	code, page = w.do(t, "GET", "/", nil)
	if code != http.StatusOK || !strings.Contains(page, "host b did not answer") || !strings.Contains(page, `id="r-local/`+mine.ID+`"`) {
		t.Fatalf("the list with b down: %d, want this machine's session and a warning naming b:\n%s", code, page)
	}
}
