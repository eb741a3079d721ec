package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
)

// Options configure the live view.
type Options struct {
	Src Source
	// List selects the sessions (ended ones within List.Since included).
	List api.ListOptions
	// Exe is the agentctl binary that attach, logs and resume run as.
	Exe string
	// Refresh is how often the whole list is read again, for what changes
	// without an event (tokens, cost, last activity); 0 never.
	Refresh time.Duration
	// Colour turns colours on; without it every state is still spelt out.
	Colour bool
	// Home is the user's home directory, shown as ~.
	Home string
	// ShowEnded shows ended sessions from the start.
	ShowEnded bool
	// Pager is the command `l` pipes the log into ("" means $PAGER or less).
	Pager string
}

type mode int

const (
	modeTable mode = iota
	modeFilter
	modeConfirmStop
	modeResume
	modeInput
	modeHelp
)

// Messages the model gets besides the feed's.
type (
	tickMsg    time.Time
	refreshMsg struct{}
	detailMsg  Detail
	resultMsg  string
	// actedMsg is the result of an action that changed a session, after
	// which the list is read again.
	actedMsg string
	fatalMsg struct{ err error }
	// listErrMsg says why a list request failed; retryListMsg asks again.
	listErrMsg   string
	retryListMsg struct{}
)

// Model is the terminal program's state; Update is its only writer.
type Model struct {
	ctx    context.Context
	o      Options
	st     *State
	view   ViewOptions
	rows   []Row
	cursor int
	// selected is the id under the cursor, kept across reorders.
	selected      string
	width, height int
	now           time.Time
	mode          mode
	edit          []rune
	target        Row
	line          string
	showDetail    bool
	detail        Detail
	detailMode    DetailMode
	detailBusy    bool
	// follow is the output stream of the selected session.
	follow follow
	styles Styles
	fatal  error
	// ready is set by the first snapshot.
	ready bool
	// retrying says a failed list is to be asked again.
	retrying bool
}

// NewModel builds the view's model. ctx bounds every request it makes.
func NewModel(ctx context.Context, o Options) *Model {
	m := &Model{ctx: ctx, o: o, st: NewState(), width: 80, height: 24, now: time.Now(), showDetail: true, styles: PlainStyles()}
	m.view.ShowEnded = o.ShowEnded
	if o.Colour {
		m.styles = ColourStyles()
	}
	return m
}

// Init starts the clock and the periodic refresh.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(tick(), m.refreshLater())
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) refreshLater() tea.Cmd {
	if m.o.Refresh <= 0 {
		return nil
	}
	return tea.Tick(m.o.Refresh, func(time.Time) tea.Msg { return refreshMsg{} })
}

// Update takes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case snapshotMsg:
		m.st.Snapshot(msg.list, msg.asOf)
		m.st.ListErr = ""
		m.ready = true
		m.now = time.Now()
		m.reflow()
		return m, m.fetchDetail(true)
	case eventMsg:
		changed, resync := m.st.Apply(api.Event(msg))
		var cmd tea.Cmd
		if resync {
			cmd = m.list()
		}
		if changed {
			m.now = time.Now()
			m.reflow()
			if msg.Session != nil && msg.Session.ID == m.selected {
				cmd = tea.Batch(cmd, m.fetchDetail(true))
			}
		}
		return m, cmd
	case linkMsg:
		m.st.Link = string(msg)
	case listErrMsg:
		// Read again soon (one retry at a time): rows must not stay stale
		// until the next event.
		m.st.ListErr = string(msg)
		if m.retrying {
			return m, nil
		}
		m.retrying = true
		return m, tea.Tick(time.Second, func(time.Time) tea.Msg { return retryListMsg{} })
	case retryListMsg:
		m.retrying = false
		return m, m.list()
	case tickMsg:
		m.now = time.Time(msg)
		return m, tick()
	case chunksMsg:
		if msg.gen != m.follow.gen {
			return m, nil // a stream since left
		}
		m.detail.ID, m.detail.Mode = m.follow.id, DetailOutput
		m.detail.Lines = append(m.detail.Lines, msg.lines...)
		if n := len(m.detail.Lines); n > keptLines {
			m.detail.Lines = slices.Clone(m.detail.Lines[n-keptLines:])
		}
		return m, waitChunks(msg.gen, m.follow.ch)
	case streamEndMsg:
		if msg.gen == m.follow.gen {
			m.follow.cancel = nil // ended; its lines stay
			m.detail.ID = m.follow.id
			if msg.err != nil {
				m.detail.Err = msg.err.Error()
			}
		}
	case refreshMsg:
		return m, tea.Batch(m.list(), m.refreshLater())
	case detailMsg:
		m.detailBusy = false
		if msg.ID != m.selected || m.detailMode != DetailPeek {
			// Read for a row or a mode since left.
			return m, m.fetchDetail(false)
		}
		m.detail = Detail(msg)
	case resultMsg:
		m.line = string(msg)
	case actedMsg:
		m.line = string(msg)
		return m, tea.Batch(m.list(), m.fetchDetail(true))
	case fatalMsg:
		m.fatal = msg.err
		return m, tea.Quit
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// reflow derives the rows again and keeps the cursor on its session.
func (m *Model) reflow() {
	m.rows = m.st.Rows(m.view)
	m.cursor = min(m.cursor, max(0, len(m.rows)-1))
	for i, r := range m.rows {
		if r.ID == m.selected {
			m.cursor = i
			break
		}
	}
	if len(m.rows) > 0 {
		m.selected = m.rows[m.cursor].ID
	} else {
		m.selected = ""
	}
}

func (m *Model) move(to int) tea.Cmd {
	if len(m.rows) == 0 {
		return nil
	}
	to = max(0, min(to, len(m.rows)-1))
	if to == m.cursor {
		return nil
	}
	m.cursor = to
	m.selected = m.rows[to].ID
	return m.fetchDetail(false)
}

func (m *Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	switch key {
	case "ctrl+c":
		return m, tea.Quit
	case "ctrl+z":
		return m, tea.Suspend // fg brings the view back
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeTable
		return m, nil
	case modeConfirmStop:
		m.mode = modeTable
		if key == "y" || key == "Y" {
			return m, m.stop(m.target)
		}
		m.line = "stop cancelled"
		return m, nil
	case modeFilter, modeResume, modeInput:
		return m.editKey(k)
	}
	switch key {
	case "q":
		return m, tea.Quit
	case "up", "k":
		return m, m.move(m.cursor - 1)
	case "down", "j":
		return m, m.move(m.cursor + 1)
	case "pgup":
		return m, m.move(m.cursor - max(1, m.height/2))
	case "pgdown":
		return m, m.move(m.cursor + max(1, m.height/2))
	case "home":
		return m, m.move(0)
	case "end":
		return m, m.move(len(m.rows) - 1)
	case "?":
		m.mode = modeHelp
	case "/":
		m.mode, m.edit = modeFilter, []rune(m.view.Filter)
	case "esc":
		m.view.Filter = ""
		m.line = ""
		m.reflow()
		return m, m.fetchDetail(false)
	case "a":
		m.view.ShowEnded = !m.view.ShowEnded
		m.reflow()
		return m, m.fetchDetail(false)
	case "g":
		m.view.Group = m.view.Group.Next()
		m.reflow()
	case "d":
		m.showDetail = !m.showDetail
		return m, m.fetchDetail(false)
	case "tab":
		m.detailMode = 1 - m.detailMode
		return m, m.fetchDetail(false)
	case "o":
		m.detailMode = DetailOutput
		return m, m.fetchDetail(false)
	case "p":
		m.detailMode = DetailPeek
		return m, m.fetchDetail(false)
	}
	if len(m.rows) == 0 {
		return m, nil
	}
	r := m.rows[m.cursor]
	switch key {
	case "enter":
		return m, m.attach(r)
	case "s":
		if r.Status != api.StatusRunning && r.Status != api.StatusQueued {
			m.line = fmt.Sprintf("%s is %s: nothing to stop", r.Handle, StatusText(r.Session))
			return m, nil
		}
		m.mode, m.target = modeConfirmStop, r
	case "r":
		switch {
		case r.Origin != api.OriginLaunched:
			m.line = fmt.Sprintf("%s was not started by agentctl: resume it with its own CLI", r.Handle)
			return m, nil
		case r.Adapter == api.ExecAdapter:
			m.line = fmt.Sprintf("%s is a plain command: it has no conversation to resume (i sends it a line)", r.Handle)
			return m, nil
		}
		m.mode, m.target, m.edit = modeResume, r, nil
	case "i":
		if r.Status != api.StatusRunning || r.Origin != api.OriginLaunched {
			m.line = fmt.Sprintf("%s has no terminal to type into (%s, %s)", r.Handle, r.Origin, StatusText(r.Session))
			return m, nil
		}
		m.mode, m.target, m.edit = modeInput, r, nil
	case "l":
		return m, m.pager(r)
	case "y", "n":
		if r.Activity != api.ActivityWaiting || r.WaitingFor != api.WaitingPermission {
			m.line = fmt.Sprintf("%s is not waiting for a permission (y/n answer one)", r.Handle)
			return m, nil
		}
		action := api.DecisionApprove
		if key == "n" {
			action = api.DecisionDeny
		}
		return m, m.decide(r, action)
	}
	return m, nil
}

// decide approves or denies the permission r waits for: the request the
// row shows, by its id, so that one that replaced it is not answered.
func (m *Model) decide(r Row, action string) tea.Cmd {
	m.line = fmt.Sprintf("%s %s…", action, r.Handle)
	ctx, src := m.ctx, m.o.Src
	d := api.Decision{Action: action}
	if r.Waiting != nil {
		d.Request = r.Waiting.Request
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if _, err := src.Decide(ctx, r.ID, d); err != nil {
			return resultMsg(fmt.Sprintf("%s %s failed: %v", action, r.Handle, err))
		}
		if action == api.DecisionApprove {
			return actedMsg(fmt.Sprintf("approved %s's request", r.Handle))
		}
		return actedMsg(fmt.Sprintf("denied %s's request", r.Handle))
	}
}

// editKey edits the prompt line: the filter (applied as it is typed), a
// resume message or a line of input.
func (m *Model) editKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		if m.mode == modeFilter {
			m.view.Filter = ""
			m.reflow()
		}
		m.mode, m.edit = modeTable, nil
		return m, m.fetchDetail(false)
	case "enter":
		text := string(m.edit)
		md := m.mode
		m.mode, m.edit = modeTable, nil
		switch md {
		case modeResume:
			if strings.TrimSpace(text) == "" {
				m.line = "resume cancelled: no message"
				return m, nil
			}
			return m, m.resume(m.target, text)
		case modeInput:
			return m, m.input(m.target, text)
		}
		return m, m.fetchDetail(false)
	case "backspace":
		if len(m.edit) > 0 {
			m.edit = m.edit[:len(m.edit)-1]
		}
	case "ctrl+u":
		m.edit = nil
	case "ctrl+w":
		s := strings.TrimRight(string(m.edit), " ")
		if i := strings.LastIndex(s, " "); i >= 0 {
			m.edit = []rune(s[:i+1])
		} else {
			m.edit = nil
		}
	default:
		if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
			m.edit = append(m.edit, []rune(k.Text)...)
		}
	}
	if m.mode == modeFilter {
		m.view.Filter = string(m.edit)
		m.reflow()
	}
	return m, nil
}

// promptLine is the line above the footer.
func (m *Model) promptLine() string {
	switch m.mode {
	case modeFilter:
		return "filter: " + string(m.edit) + "█  (enter keeps it, esc clears)"
	case modeConfirmStop:
		return fmt.Sprintf("stop %s (%s, %s)? y/n", m.target.Handle, m.target.Adapter, StatusText(m.target.Session))
	case modeResume:
		return fmt.Sprintf("resume %s with: %s█  (enter sends, esc cancels)", m.target.Handle, string(m.edit))
	case modeInput:
		return fmt.Sprintf("send to %s: %s█  (enter sends with Enter, esc cancels)", m.target.Handle, string(m.edit))
	}
	if !m.ready && m.st.Link == "" {
		return "connecting to the agentctl service…"
	}
	return m.line
}

// Frame is the screen as it stands.
func (m *Model) Frame() Frame {
	d := m.detail
	if d.Mode != m.detailMode {
		d = Detail{Mode: m.detailMode} // being read
	}
	return Frame{
		Width: m.width, Height: m.height, Now: m.now, State: m.st, Rows: m.rows, Cursor: m.cursor,
		Opts: m.view, ShowDetail: m.showDetail, Detail: d, Line: m.promptLine(),
		Help: m.mode == modeHelp, Styles: m.styles, Home: m.o.Home,
	}
}

// View draws the screen in the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(Render(m.Frame()))
	v.AltScreen = true
	v.WindowTitle = "agentctl top"
	return v
}

// requestTimeout bounds the view's own requests.
const requestTimeout = 10 * time.Second

func (m *Model) list() tea.Cmd {
	ctx, src, o, asOf := m.ctx, m.o.Src, m.o.List, m.st.Seq
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		l, err := src.List(ctx, o)
		if err != nil {
			return listErrMsg(fmt.Sprintf("list sessions: %v", err))
		}
		return snapshotMsg{list: l, asOf: asOf}
	}
}

// detailLines is how many lines of output the pane starts with;
// keptLines how many it keeps as more come.
const (
	detailLines = 50
	keptLines   = 200
)

// follow is the output stream the detail pane shows: one at a time, for
// the selected session; gen tells its messages from a former stream's.
type follow struct {
	gen    int
	id     string
	ch     chan []string
	cancel context.CancelFunc
}

type (
	// chunksMsg carries the lines a stream gave since the last one.
	chunksMsg struct {
		gen   int
		lines []string
	}
	// streamEndMsg: the stream ended (the session ended, or it failed).
	streamEndMsg struct {
		gen int
		err error
	}
)

func (m *Model) stopFollow() {
	if m.follow.cancel != nil {
		m.follow.cancel()
		m.follow.cancel = nil
	}
	m.follow.id = ""
}

// fetchDetail fills the detail pane for the selected session: its output
// followed live (one stream, moved with the selection), or its last
// messages, read again when again is set (an event or a new list said
// the session changed).
func (m *Model) fetchDetail(again bool) tea.Cmd {
	if !m.showDetail || m.selected == "" {
		m.stopFollow()
		return nil
	}
	if m.detailMode == DetailOutput {
		if m.follow.id == m.selected {
			return nil // following it already (or it ended: its lines stay)
		}
		m.stopFollow()
		ctx, cancel := context.WithCancel(m.ctx)
		m.follow = follow{gen: m.follow.gen + 1, id: m.selected, ch: make(chan []string, 64), cancel: cancel}
		m.detail = Detail{Mode: DetailOutput}
		gen, id, ch, src := m.follow.gen, m.selected, m.follow.ch, m.o.Src
		stream := func() tea.Msg {
			defer close(ch)
			err := src.Logs(ctx, id, api.LogOptions{Lines: detailLines, Follow: true}, func(c api.LogChunk) error {
				if c.End {
					return nil
				}
				select {
				case ch <- cleanLines(c.Text):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if ctx.Err() != nil {
				err = nil
			}
			return streamEndMsg{gen: gen, err: err}
		}
		return tea.Batch(stream, waitChunks(gen, ch))
	}
	m.stopFollow()
	if m.detailBusy || (!again && m.detail.ID == m.selected && m.detail.Mode == DetailPeek) {
		return nil
	}
	m.detailBusy = true
	ctx, src, id := m.ctx, m.o.Src, m.selected
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		d := Detail{ID: id, Mode: DetailPeek}
		t, err := src.Transcript(ctx, id, 3)
		for _, msg := range t.Messages {
			d.Lines = append(d.Lines, "— "+msg.Role)
			d.Lines = append(d.Lines, cleanLines(msg.Text)...)
		}
		if err != nil {
			d.Err = err.Error()
		}
		return detailMsg(d)
	}
}

// waitChunks hands on what a stream gave: all the lines waiting at once,
// so a burst of output is one redraw.
func waitChunks(gen int, ch chan []string) tea.Cmd {
	return func() tea.Msg {
		lines, ok := <-ch
		if !ok {
			return nil
		}
		for {
			select {
			case more, ok := <-ch:
				if !ok {
					return chunksMsg{gen: gen, lines: lines}
				}
				lines = append(lines, more...)
			default:
				return chunksMsg{gen: gen, lines: lines}
			}
		}
	}
}

// cleanLines splits text into lines a cell grid can hold: tabs become
// spaces and control characters go.
func cleanLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	out := strings.Split(s, "\n")
	for i, l := range out {
		l = strings.ReplaceAll(l, "\t", "    ")
		out[i] = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, l)
	}
	return out
}

func (m *Model) stop(r Row) tea.Cmd {
	m.line = fmt.Sprintf("stopping %s…", r.Handle)
	ctx, src := m.ctx, m.o.Src
	return func() tea.Msg {
		s, err := src.Stop(ctx, r.ID, api.StopRequest{})
		if err != nil {
			return actedMsg(fmt.Sprintf("stop %s failed: %v", r.Handle, err))
		}
		text := fmt.Sprintf("stopped %s: %s", r.Handle, StatusText(s))
		if len(s.Warnings) > 0 {
			text += " — " + strings.Join(s.Warnings, "; ")
		}
		return actedMsg(text)
	}
}

func (m *Model) input(r Row, text string) tea.Cmd {
	ctx, src := m.ctx, m.o.Src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if _, err := src.Input(ctx, r.ID, []byte(text+"\r")); err != nil {
			return resultMsg(fmt.Sprintf("send to %s failed: %v", r.Handle, err))
		}
		return actedMsg(fmt.Sprintf("sent a line to %s", r.Handle))
	}
}

// resume runs `agentctl resume`, which knows how each agent continues its
// native session.
func (m *Model) resume(r Row, text string) tea.Cmd {
	m.line = fmt.Sprintf("resuming %s…", r.Handle)
	ctx, exe := m.ctx, m.o.Exe
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, exe, "resume", r.ID, text).CombinedOutput()
		msg := strings.TrimSpace(string(out))
		if err != nil {
			return actedMsg(fmt.Sprintf("resume %s failed: %v: %s", r.Handle, err, msg))
		}
		return actedMsg(fmt.Sprintf("resumed %s as %s", r.Handle, msg))
	}
}

// attach suspends the view and runs `agentctl attach` in the terminal;
// the view comes back when it detaches.
func (m *Model) attach(r Row) tea.Cmd {
	switch {
	case r.Origin != api.OriginLaunched:
		m.line = fmt.Sprintf("%s was not started by agentctl: it has no terminal here", r.Handle)
		return nil
	case r.Status != api.StatusRunning:
		m.line = fmt.Sprintf("%s is %s: nothing to attach to (l shows its log)", r.Handle, StatusText(r.Session))
		return nil
	}
	c := exec.CommandContext(m.ctx, m.o.Exe, "attach", r.ID)
	return tea.ExecProcess(c, func(err error) tea.Msg {
		if err != nil {
			return actedMsg(fmt.Sprintf("attach %s: %v", r.Handle, err))
		}
		return actedMsg(fmt.Sprintf("detached from %s", r.Handle))
	})
}

// pager shows the whole log in a pager, with the view suspended.
func (m *Model) pager(r Row) tea.Cmd {
	pg := m.o.Pager
	if pg == "" {
		pg = os.Getenv("PAGER")
	}
	if pg == "" {
		pg = "less -R"
	}
	pc := &pagerCmd{ctx: m.ctx, exe: m.o.Exe, id: r.ID, pager: strings.Fields(pg)}
	return tea.Exec(pc, func(err error) tea.Msg {
		if err != nil {
			return resultMsg(fmt.Sprintf("logs of %s: %v", r.Handle, err))
		}
		return resultMsg("")
	})
}

// pagerCmd pipes `agentctl logs -n 0 ID` into a pager.
type pagerCmd struct {
	ctx      context.Context
	exe, id  string
	pager    []string
	in       io.Reader
	out, err io.Writer
}

func (p *pagerCmd) SetStdin(r io.Reader)  { p.in = r }
func (p *pagerCmd) SetStdout(w io.Writer) { p.out = w }
func (p *pagerCmd) SetStderr(w io.Writer) { p.err = w }

func (p *pagerCmd) Run() error {
	if len(p.pager) == 0 {
		return errors.New("no pager")
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	logs := exec.CommandContext(ctx, p.exe, "logs", "-n", "0", p.id)
	pg := exec.CommandContext(ctx, p.pager[0], p.pager[1:]...)
	pipe, err := logs.StdoutPipe()
	if err != nil {
		return fmt.Errorf("pipe the log to %s: %w", p.pager[0], err)
	}
	// Both write to the same error stream: one at a time, unless it is a
	// file both hold themselves.
	errw := p.err
	if _, isFile := errw.(*os.File); !isFile && errw != nil {
		errw = &lockedWriter{w: errw}
	}
	logs.Stderr = errw
	pg.Stdin, pg.Stdout, pg.Stderr = pipe, p.out, errw
	if err := logs.Start(); err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	if err := pg.Run(); err != nil {
		cancel()
		logs.Wait()
		return fmt.Errorf("pager %s: %w", p.pager[0], err)
	}
	// The pager may quit before the log is all read: stop the reader.
	cancel()
	logs.Wait()
	return nil
}

// restoreScreen leaves the alternate screen, shows the cursor, and turns
// off mouse reporting and bracketed paste.
const restoreScreen = "\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l"

// lockedWriter serialises writes from several processes' copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Run runs the live view until the user quits. The terminal is restored on
// quit, on SIGINT, SIGTERM and SIGHUP, and on a panic.
func Run(ctx context.Context, o Options, progOpts ...tea.ProgramOption) (runErr error) {
	// Every signal ends the program through its context, which restores
	// the terminal. (Bubble Tea's own handler would race a caller's
	// handler of the same signal and can block its shutdown forever.)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	m := NewModel(ctx, o)
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithoutSignalHandler()}, progOpts...)...)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				p.Send(fatalMsg{fmt.Errorf("the event feed failed: %v", r)})
			}
		}()
		feed(fctx, o.Src, o.List, func(msg any) { p.Send(msg) })
	}()
	// However the program ends (a panic included), the terminal goes back
	// to the modes it had (echo, line editing), restored here first-hand;
	// after a panic also to the main screen, a visible cursor and no mouse
	// reporting.
	if saved, err := term.GetState(int(os.Stdin.Fd())); err == nil {
		defer func() {
			term.Restore(int(os.Stdin.Fd()), saved)
			if errors.Is(runErr, tea.ErrProgramPanic) {
				fmt.Fprint(os.Stdout, restoreScreen)
			}
		}()
	}
	_, err := p.Run()
	cancel()
	<-done
	switch {
	case m.fatal != nil:
		return m.fatal
	case errors.Is(err, tea.ErrInterrupted), errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("agentctl top: %w", err)
	}
	return nil
}
