package top

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// fixture is a fixed set of sessions: every status, a waiting reason,
// tokens and cost, groups, discovered and launched.
func fixture() api.SessionList {
	home := "/home/ada"
	return api.SessionList{
		Warnings: []string{"codex: discovery timed out after 2s; its sessions show as unknown"},
		Sessions: []api.Session{
			sess("01m88a1111111111111111aaaa", api.StatusRunning, func(s *api.Session) {
				s.Name, s.Adapter, s.Activity, s.WaitingFor = "fix-tests", "claude", api.ActivityWaiting, api.WaitingPermission
				s.Waiting = &api.Waiting{Tool: "Bash", Input: "rm -rf build"}
				s.Model, s.TokensIn, s.TokensOut, s.CostUSD = "claude-sonnet-4-5", i64(182_000), i64(9_400), f64(0.84)
				s.Cwd, s.Group, s.PID, s.LastActivity = home+"/src/agentctl", "g-ci", 4242, at(-20*time.Second)
				s.Prompt, s.CreatedAt = "make the failing tests pass", t0.Add(-25*time.Minute)
			}),
			sess("01m88a2222222222222222bbbb", api.StatusRunning, func(s *api.Session) {
				s.Name, s.Adapter, s.Activity = "docs", "codex", "busy"
				s.Model, s.TokensIn, s.TokensOut, s.CostUSD = "gpt-5-codex", i64(54_100), i64(3_200), f64(0.31)
				s.Cwd, s.Group, s.PID, s.LastActivity = home+"/src/site", "g-ci", 4343, at(-3*time.Second)
				s.Prompt, s.CreatedAt = "rewrite the install page", t0.Add(-12*time.Minute)
			}),
			sess("01m88a3333333333333333cccc", api.StatusRunning, func(s *api.Session) {
				s.Adapter, s.Activity, s.Origin = "pi", "idle", api.OriginDiscovered
				s.Model, s.Cwd, s.LastActivity = "qwen3-coder", "/srv/monorepo/services/billing/internal/ledger", at(-4*time.Minute)
				s.CreatedAt = t0.Add(-3 * time.Hour)
			}),
			sess("01m88a4444444444444444dddd", api.StatusUnknown, func(s *api.Session) {
				s.Adapter, s.Origin, s.Cwd = "codex", api.OriginDiscovered, home+"/src/api"
				s.Warnings = []string{"codex discovery timed out"}
				s.CreatedAt = t0.Add(-40 * time.Minute)
			}),
			sess("01m88a5555555555555555eeee", api.StatusExited, func(s *api.Session) {
				s.Name, s.Command, s.Cwd, s.ExitCode, s.EndedAt = "build", []string{"make", "all"}, home+"/src/agentctl", code(2), at(-5*time.Minute)
				s.CreatedAt = t0.Add(-9 * time.Minute)
			}),
			sess("01m88a6666666666666666ffff", api.StatusLost, func(s *api.Session) {
				s.Adapter, s.Cwd, s.EndedAt, s.Group = "opencode", home+"/src/site", at(-2*time.Hour), "g-ci"
				s.CreatedAt = t0.Add(-5 * time.Hour)
			}),
			sess("01m88a7777777777777777gggg", api.StatusKilled, func(s *api.Session) {
				s.Adapter, s.Signal, s.Cwd, s.EndedAt = "claude", "SIGTERM", home, at(-30*time.Minute)
				s.Model, s.CostUSD, s.TokensIn, s.TokensOut = "claude-opus-4-1", f64(2.10), i64(1_200_000), i64(41_000)
				s.CreatedAt = t0.Add(-70 * time.Minute)
			}),
		},
	}
}

func fixtureFrame(width, height int) Frame {
	st := NewState()
	st.Snapshot(fixture(), 0)
	opts := ViewOptions{ShowEnded: true}
	rows := st.Rows(opts)
	return Frame{
		Width: width, Height: height, Now: t0, State: st, Rows: rows, Opts: opts, Home: "/home/ada",
		ShowDetail: true,
		Detail: Detail{ID: rows[0].ID, Lines: []string{
			"● I'll run the build to see which tests fail.",
			"  Bash(rm -rf build && make test)",
			"  ⎿ Waiting for permission…",
			"Do you want to proceed?",
			"❯ 1. Yes",
			"  2. No, and tell Claude what to do differently (esc)",
		}},
		Styles: PlainStyles(),
	}
}

func TestGoldenScreens(t *testing.T) {
	tests := []struct {
		name          string
		width, height int
		edit          func(*Frame)
	}{
		{name: "80x24", width: 80, height: 24},
		{name: "200x50", width: 200, height: 50},
		{name: "80x24-grouped", width: 80, height: 24, edit: func(f *Frame) {
			f.Opts.Group = GroupByGroup
			f.Rows = f.State.Rows(f.Opts)
			f.ShowDetail = false
		}},
		{name: "120x30-resources", width: 120, height: 30, edit: func(f *Frame) {
			l := fixture()
			pct, mem := []float64{87.5, 3.25}, []uint64{612 << 20, 1288 << 20}
			for i := range 2 {
				l.Sessions[i].Resources = &api.Resources{Source: "processes", CPUPercent: &pct[i], MemoryBytes: &mem[i]}
			}
			l.Machine = &api.Machine{CPUs: 8, Load1: 2.5, Load5: 1.75, Load15: 1, MemTotalBytes: 32 << 30, MemAvailableBytes: 20 << 30}
			f.State.Snapshot(l, 0)
			f.Rows = f.State.Rows(f.Opts)
			f.ShowDetail = false
		}},
		{name: "200x50-filter-stop", width: 200, height: 50, edit: func(f *Frame) {
			f.Opts.Filter = "site"
			f.Rows = f.State.Rows(f.Opts)
			f.Detail = Detail{ID: f.Rows[0].ID}
			f.Line = "stop docs (codex, busy)? y/n"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fixtureFrame(tc.width, tc.height)
			if tc.edit != nil {
				tc.edit(&f)
			}
			got := Render(f) + "\n"
			path := filepath.Join("testdata", tc.name+".golden")
			if os.Getenv("AGENTCTL_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read the golden screen (AGENTCTL_UPDATE_GOLDEN=1 writes it): %v", err)
			}
			if got != string(want) {
				t.Errorf("screen differs from %s:\n%s", path, got)
			}
		})
	}
}

// Every size from tiny to wide: exactly the terminal's lines, none wider,
// in colour as in plain text.
func TestRenderFitsEverySize(t *testing.T) {
	for _, styles := range []Styles{PlainStyles(), ColourStyles()} {
		for _, w := range []int{1, 10, 40, 60, 80, 100, 120, 160, 200, 300} {
			for _, h := range []int{1, 3, 8, 24, 50} {
				f := fixtureFrame(w, h)
				f.Styles = styles
				lines := strings.Split(Render(f), "\n")
				if len(lines) != h {
					t.Errorf("%dx%d: %d lines", w, h, len(lines))
				}
				for i, l := range lines {
					if n := ansi.StringWidth(l); n > w {
						t.Errorf("%dx%d: line %d is %d wide: %q", w, h, i, n, ansi.Strip(l))
					}
				}
			}
		}
	}
}

func TestPlainStylesWriteNoEscapes(t *testing.T) {
	s := Render(fixtureFrame(120, 30))
	if strings.Contains(s, "\x1b") {
		t.Errorf("plain screen has escape sequences: %q", s)
	}
	for _, word := range []string{"waiting: permission", "lost", "unknown", "killed(SIGTERM)", "exited(2)", "! codex: discovery timed out"} {
		if !strings.Contains(s, word) {
			t.Errorf("plain screen lacks %q", word)
		}
	}
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// The model's update logic, without a terminal: messages in, rows and
// lines out.
func TestModelUpdate(t *testing.T) {
	type step struct {
		msg tea.Msg
		// wantRows are the handles shown after msg; nil skips the check.
		wantRows []string
		// wantLine is a part of the line above the footer.
		wantLine string
		// wantSelected is the handle under the cursor ("" skips).
		wantSelected string
	}
	snap := snapshotMsg{list: fixture()}
	stopDocs := fixture().Sessions[1]
	stopDocs.Status, stopDocs.Signal, stopDocs.EndedAt = api.StatusKilled, "SIGTERM", at(0)
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "the snapshot shows running and unknown rows", steps: []step{
			{msg: snap, wantRows: []string{"fix-tests", "docs", "01m88a3", "01m88a4"}, wantSelected: "fix-tests"},
		}},
		{name: "a toggles ended rows", steps: []step{
			{msg: snap},
			{msg: key("a"), wantRows: []string{"fix-tests", "docs", "01m88a3", "01m88a4", "build", "01m88a7", "01m88a6"}},
			{msg: key("a"), wantRows: []string{"fix-tests", "docs", "01m88a3", "01m88a4"}},
		}},
		{name: "the filter narrows as it is typed; esc clears it", steps: []step{
			{msg: snap},
			{msg: key("/"), wantLine: "filter: █"},
			{msg: key("c"), wantRows: []string{"fix-tests", "docs", "01m88a3", "01m88a4"}},
			{msg: key("o"), wantRows: []string{"docs", "01m88a3", "01m88a4"}},
			{msg: key("d"), wantRows: []string{"docs", "01m88a3", "01m88a4"}},
			{msg: key("e"), wantRows: []string{"docs", "01m88a3", "01m88a4"}},
			{msg: key("backspace")}, {msg: key("e")}, {msg: key("x"), wantRows: []string{"docs", "01m88a4"}, wantLine: "filter: codex█"},
			{msg: key("enter"), wantRows: []string{"docs", "01m88a4"}, wantSelected: "docs"},
			{msg: key("esc"), wantRows: []string{"fix-tests", "docs", "01m88a3", "01m88a4"}, wantSelected: "docs"},
		}},
		{name: "the cursor stays on its session when rows reorder", steps: []step{
			{msg: snap},
			{msg: key("down"), wantSelected: "docs"},
			{msg: eventMsg(ev(7, api.EventSessionStarted, sess("01m88a9", api.StatusRunning, func(s *api.Session) { s.Name = "new"; s.CreatedAt = t0.Add(time.Hour) }))),
				wantRows: []string{"fix-tests", "new", "docs", "01m88a3", "01m88a4"}, wantSelected: "docs"},
		}},
		{name: "stop asks first; n cancels", steps: []step{
			{msg: snap},
			{msg: key("down")},
			{msg: key("s"), wantLine: "stop docs (codex, busy)? y/n"},
			{msg: key("n"), wantLine: "stop cancelled"},
		}},
		{name: "an ended session has nothing to stop or attach", steps: []step{
			{msg: snap},
			{msg: key("a")},
			{msg: key("/")}, {msg: key("e")}, {msg: key("x")}, {msg: key("i")}, {msg: key("t")}, {msg: key("enter"), wantRows: []string{"build"}},
			{msg: key("s"), wantLine: "build is exited(2): nothing to stop"},
			{msg: key("r"), wantLine: "build is a plain command: it has no conversation to resume"},
			{msg: key("enter"), wantLine: "build is exited(2): nothing to attach to"},
		}},
		{name: "a discovered session takes no input", steps: []step{
			{msg: snap},
			{msg: key("down")}, {msg: key("down")},
			{msg: key("i"), wantLine: "01m88a3 has no terminal to type into (discovered, idle)"},
			{msg: key("r"), wantLine: "01m88a3 was not started by agentctl"},
		}},
		{name: "the resume prompt collects a message; esc cancels it", steps: []step{
			{msg: snap},
			{msg: key("r")}, {msg: key("g")}, {msg: key("o"), wantLine: "resume fix-tests with: go█"},
			{msg: key("backspace"), wantLine: "resume fix-tests with: g█"},
			{msg: key("esc"), wantLine: ""},
		}},
		{name: "a stopped session leaves the running rows", steps: []step{
			{msg: snap},
			{msg: eventMsg(ev(8, api.EventSessionStopped, stopDocs)), wantRows: []string{"fix-tests", "01m88a3", "01m88a4"}},
		}},
		{name: "the link going down is shown", steps: []step{
			{msg: snap},
			{msg: linkMsg("event stream ended; reconnecting")},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel(context.Background(), Options{})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
			for i, s := range tc.steps {
				m.Update(s.msg)
				if s.wantRows != nil {
					if got := ids(m.rows); strings.Join(got, ",") != strings.Join(s.wantRows, ",") {
						t.Errorf("step %d: rows %q, want %q", i, got, s.wantRows)
					}
				}
				if s.wantLine != "" || s.msg == key("esc") {
					if got := m.promptLine(); !strings.Contains(got, s.wantLine) || (s.wantLine == "" && got != "") {
						t.Errorf("step %d: line %q, want %q", i, got, s.wantLine)
					}
				}
				if s.wantSelected != "" && (len(m.rows) == 0 || m.rows[m.cursor].Handle != s.wantSelected) {
					t.Errorf("step %d: selected %v, want %s", i, m.selected, s.wantSelected)
				}
			}
			if l := m.st.Link; tc.name == "the link going down is shown" && !strings.Contains(Render(m.Frame()), "! service: "+l) {
				t.Errorf("link warning not on screen")
			}
		})
	}
}

// decisions records the answers the view sends.
type decisions struct {
	Source
	got []string
}

func (d *decisions) Decide(_ context.Context, id string, dec api.Decision) (api.Session, error) {
	d.got = append(d.got, id+" "+dec.Action+" "+dec.Request)
	return api.Session{ID: id}, nil
}

// y and n answer the permission the selected session waits for, and only
// that, naming the request the row shows: on any other row they say why
// they do nothing.
func TestApproveAndDenyKeys(t *testing.T) {
	src := &decisions{}
	m := NewModel(context.Background(), Options{Src: src})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	list := fixture()
	list.Sessions[0].Waiting.Request = "5f3a9c0d2e1b4a77"
	m.Update(snapshotMsg{list: list})
	if m.rows[m.cursor].Handle != "fix-tests" {
		t.Fatalf("selected %s, want the waiting fix-tests", m.rows[m.cursor].Handle)
	}
	for _, k := range []string{"y", "n"} {
		_, cmd := m.Update(key(k))
		if cmd == nil {
			t.Fatalf("%s on a waiting permission does nothing", k)
		}
		m.Update(cmd())
	}
	want := []string{fixture().Sessions[0].ID + " approve 5f3a9c0d2e1b4a77", fixture().Sessions[0].ID + " deny 5f3a9c0d2e1b4a77"}
	if strings.Join(src.got, ",") != strings.Join(want, ",") {
		t.Errorf("decisions %q, want %q", src.got, want)
	}
	m.Update(key("down"))
	if _, cmd := m.Update(key("y")); cmd != nil || !strings.Contains(m.promptLine(), "not waiting for a permission") {
		t.Errorf("y on a row that waits for nothing: line %q", m.promptLine())
	}
	if len(src.got) != 2 {
		t.Errorf("decisions %q after y on another row", src.got)
	}
}

// The cost of one event with 500 sessions: apply it, derive the rows,
// draw the screen (what happens between an event and the redraw).
func BenchmarkEventToScreen500(b *testing.B) {
	var l api.SessionList
	for i := range 500 {
		st := api.StatusRunning
		if i%4 != 0 {
			st = api.StatusExited
		}
		l.Sessions = append(l.Sessions, sess(fmt.Sprintf("01m88b%020d", i), st, func(s *api.Session) {
			s.Name, s.Cwd, s.Model, s.ExitCode = fmt.Sprintf("s-%d", i), "/home/ada/src/p"+fmt.Sprint(i%10), "claude-sonnet-4-5", code(0)
			s.TokensIn, s.CostUSD, s.EndedAt = i64(int64(i)*1000), f64(float64(i)/100), at(-time.Duration(i)*time.Second)
		}))
	}
	m := NewModel(context.Background(), Options{ShowEnded: true})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	m.Update(snapshotMsg{list: l})
	b.ResetTimer()
	for i := range b.N {
		s := l.Sessions[i%len(l.Sessions)]
		s.Activity = []string{"busy", "idle"}[i%2]
		m.Update(eventMsg(ev(uint64(i+1), api.EventSessionBusy, s)))
		_ = m.View()
	}
}

// A failed list is shown, asked again once at a time, and cleared by the
// next answer.
func TestListErrorIsShownAndRetriedOnce(t *testing.T) {
	m := NewModel(context.Background(), Options{})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	m.Update(snapshotMsg{list: fixture()})
	if _, cmd := m.Update(listErrMsg("list sessions: no answer")); cmd == nil {
		t.Fatal("a failed list is not asked again")
	}
	if _, cmd := m.Update(listErrMsg("list sessions: no answer")); cmd != nil {
		t.Error("a second failure while a retry is pending asks again too")
	}
	if s := Render(m.Frame()); !strings.Contains(s, "! service: list sessions: no answer") {
		t.Errorf("the failure is not on screen:\n%s", s)
	}
	m.Update(retryListMsg{})
	m.Update(snapshotMsg{list: fixture()})
	if s := Render(m.Frame()); strings.Contains(s, "! service:") {
		t.Errorf("the failure stays on screen after a list answered:\n%s", s)
	}
}

// With more rows than the screen holds, the selected one is always drawn.
func TestCursorStaysOnScreen(t *testing.T) {
	var l api.SessionList
	for i := range 120 {
		l.Sessions = append(l.Sessions, sess(fmt.Sprintf("01m88c%020d", i), api.StatusRunning, func(s *api.Session) {
			s.Name, s.CreatedAt = fmt.Sprintf("s-%03d", i), t0.Add(-time.Duration(i)*time.Minute)
		}))
	}
	end := tea.KeyPressMsg{Code: tea.KeyEnd}
	pgup := tea.KeyPressMsg{Code: tea.KeyPgUp}
	tests := []struct {
		name string
		keys []tea.Msg
		want string
	}{
		{name: "first", want: "s-000"},
		{name: "three down", keys: []tea.Msg{key("down"), key("down"), key("down")}, want: "s-003"},
		{name: "end", keys: []tea.Msg{end}, want: "s-119"},
		{name: "end then a page up", keys: []tea.Msg{end, pgup}, want: "s-107"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel(context.Background(), Options{})
			m.Update(tea.WindowSizeMsg{Width: 100, Height: 24})
			m.Update(snapshotMsg{list: l})
			for _, k := range tc.keys {
				m.Update(k)
			}
			screen := Render(m.Frame())
			if !strings.Contains(screen, "› "+tc.want) {
				t.Errorf("the selected row %s is not on screen:\n%s", tc.want, screen)
			}
		})
	}
}

// Nothing a session reports (a name, a reason, a warning, an error) can
// move the cursor or break a row.
func TestRenderNeutralisesControlCharacters(t *testing.T) {
	l := fixture()
	l.Sessions[0].Name = "evil\x1b[2J\nname\u202egnp.exe"
	l.Sessions[0].Activity = "waiting: line one\nline two\r\x07"
	l.Sessions[0].Group = "g\x1b]0;title\x07"
	l.Sessions[0].Warnings = []string{"bad\nwarning\u200b\u2066"}
	l.Warnings = append(l.Warnings, "multi\nline\x1b[31m")
	st := NewState()
	st.Snapshot(l, 0)
	opts := ViewOptions{ShowEnded: true, Group: GroupByGroup}
	f := Frame{Width: 120, Height: 30, Now: t0, State: st, Rows: st.Rows(opts), Opts: opts, ShowDetail: true,
		Detail: Detail{Err: "first\nsecond"}, Line: "resume failed: exit status 2:\nusage…", Styles: PlainStyles()}
	f.Detail.ID = f.Rows[0].ID
	for i := range f.Rows {
		if f.Rows[i].ID == l.Sessions[0].ID {
			f.Cursor = i
			f.Detail.ID = f.Rows[i].ID
		}
	}
	screen := Render(f)
	if strings.ContainsAny(screen, "\x1b\x07\r\u202e\u200b\u2066") {
		t.Errorf("control characters reach the screen: %q", screen)
	}
	if n := strings.Count(screen, "\n") + 1; n != 30 {
		t.Errorf("%d lines, want 30:\n%s", n, screen)
	}
	for _, want := range []string{"waiting: line one line two", "! multi line", "! bad warning", "resume failed: exit status 2: usage…", "! first second"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
}

func TestDetailModeKeys(t *testing.T) {
	tests := []struct {
		keys []string
		want string
	}{
		{keys: nil, want: "output (tab: peek)"},
		{keys: []string{"tab"}, want: "peek (tab: output)"},
		{keys: []string{"tab", "tab"}, want: "output (tab: peek)"},
		{keys: []string{"p"}, want: "peek (tab: output)"},
		{keys: []string{"p", "p"}, want: "peek (tab: output)"},
		{keys: []string{"p", "o"}, want: "output (tab: peek)"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.keys, ","), func(t *testing.T) {
			m := NewModel(context.Background(), Options{})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
			m.Update(snapshotMsg{list: fixture()})
			for _, k := range tc.keys {
				if k == "tab" {
					m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
				} else {
					m.Update(key(k))
				}
			}
			if s := Render(m.Frame()); !strings.Contains(s, "── "+tc.want) {
				t.Errorf("the detail pane's title lacks %q:\n%s", tc.want, s)
			}
		})
	}
}

// An event carries no resources: a running session keeps those of the last
// snapshot, an ended one has none.
func TestEventsKeepResources(t *testing.T) {
	st := NewState()
	l := fixture()
	pct := 50.0
	l.Sessions[0].Resources = &api.Resources{CPUPercent: &pct}
	l.Sessions[1].Resources = &api.Resources{CPUPercent: &pct}
	st.Snapshot(l, 0)
	busy := l.Sessions[0]
	busy.Resources, busy.Activity = nil, "busy"
	st.Apply(api.Event{Seq: 1, Type: api.EventSessionBusy, Session: &busy})
	ended := l.Sessions[1]
	ended.Resources, ended.Status = nil, api.StatusExited
	st.Apply(api.Event{Seq: 2, Type: api.EventSessionStopped, Session: &ended})
	if got, _ := st.Session(busy.ID); got.Resources == nil || got.Activity != "busy" {
		t.Errorf("running session after an event: %+v, activity %q; want the snapshot's figures kept", got.Resources, got.Activity)
	}
	if got, _ := st.Session(ended.ID); got.Resources != nil {
		t.Errorf("ended session after an event: %+v; want no figures", got.Resources)
	}
}

// TestPendingTotals: a session whose totals the service is still counting
// shows them pending in TOKENS and COST, never a zero nor "-".
func TestPendingTotals(t *testing.T) {
	t.Parallel()
	l := fixture()
	l.Sessions[6].TotalsPending = true
	l.Sessions[6].TokensIn, l.Sessions[6].TokensOut, l.Sessions[6].CostUSD = i64(0), i64(0), f64(0)
	st := NewState()
	st.Snapshot(l, 0)
	opts := ViewOptions{ShowEnded: true}
	f := Frame{Width: 200, Height: 30, Now: t0, State: st, Rows: st.Rows(opts), Opts: opts, Home: "/home/ada", Styles: PlainStyles()}
	var line string
	for _, l := range strings.Split(Render(f), "\n") {
		if strings.Contains(l, "01m88a7") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no row for the pending session:\n%s", Render(f))
	}
	fields := strings.Fields(line)
	if n := strings.Count(line, text.Pending); n != 2 || slices.Contains(fields, "0/0") || slices.Contains(fields, "$0.00") {
		t.Errorf("pending totals shown as %q, want %s in TOKENS and COST", line, text.Pending)
	}
}
