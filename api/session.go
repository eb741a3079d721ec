// Package api holds the wire types shared by the agentctl service and its
// clients: the session object, requests, and error codes.
package api

import (
	"net/url"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/internal/text"
)

// Status is a session's state, derived at query time and never stored.
type Status string

const (
	// StatusRunning: the recorded pid is alive with the recorded start time,
	// or the adapter's native truth says the agent is running.
	StatusRunning Status = "running"
	// StatusExited: an exit record says the process exited by itself.
	StatusExited Status = "exited"
	// StatusKilled: an exit record says the process died of a signal.
	StatusKilled Status = "killed"
	// StatusLost: no exit record, and the pid is gone or belongs to another process.
	StatusLost Status = "lost"
	// StatusEnded: the agent's native store says the session is over, with no
	// exit code known (discovered sessions).
	StatusEnded Status = "ended"
	// StatusQueued: a launch admission holds back (a cap on running
	// sessions, the machine's memory, a provider's usage limit): its record
	// is on disk and it starts, once, when admitted (Session.Queue says why
	// and where). It is not ended.
	StatusQueued Status = "queued"
	// StatusUnknown: nobody can vouch for the session right now (an adapter
	// failed, or the evidence is ambiguous).
	StatusUnknown Status = "unknown"
)

// Ended reports whether the status is final.
func (s Status) Ended() bool {
	switch s {
	case StatusExited, StatusKilled, StatusLost, StatusEnded:
		return true
	}
	return false
}

// Origin says where agentctl learned about a session.
const (
	OriginLaunched   = "launched"   // started by this agentctl service
	OriginDiscovered = "discovered" // found only in an adapter's native store
)

// Session is the session object every read command returns.
type Session struct {
	ID string `json:"id"`
	// Handle is the shortest unique prefix of ID (at least 4 characters)
	// among the sessions the service knows: what tables show.
	Handle string `json:"handle,omitempty"`
	// Host names the host the session runs on, in a view over several
	// (set by the CLI, never by a service): handles there are HOST/ID.
	Host      string     `json:"host,omitempty"`
	Adapter   string     `json:"adapter"`
	Origin    string     `json:"origin"`
	Status    Status     `json:"status"`
	Name      string     `json:"name,omitempty"`
	Group     string     `json:"group,omitempty"`
	PID       int        `json:"pid,omitempty"`
	PGID      int        `json:"pgid,omitempty"`
	StartTime *time.Time `json:"start_time,omitempty"`
	CreatedAt time.Time  `json:"created_at,omitzero"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	// StoppedBy says a stop was asked for ("agentctl stop"): the session
	// did not end by itself.
	StoppedBy string   `json:"stopped_by,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	Command   []string `json:"command,omitempty"`

	// Facts from the agent's own records, where known.
	NativeID string `json:"native_id,omitempty"`
	// Agent is, for a plain command (adapter exec) that is an agent
	// (`run -- claude -p …`), the agent whose native session NativeID is:
	// its native facts come from that agent's adapter.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// TokensIn, TokensOut and CostUSD are this session's own: for a run
	// that continues a native session (resume), what it added to it, so
	// that the runs of one native session add up to its total.
	TokensIn  *int64   `json:"tokens_in,omitempty"`
	TokensOut *int64   `json:"tokens_out,omitempty"`
	CostUSD   *float64 `json:"cost_usd,omitempty"`
	// TotalsPending says the token and cost totals are still being
	// counted (a first read of a large transcript answers without them
	// and counts them in the background): they are absent, not zero, and
	// a later answer has them.
	TotalsPending bool `json:"totals_pending,omitempty"`
	// ResumeOf is the session whose native session this run continues.
	ResumeOf string `json:"resume_of,omitempty"`
	// OnLimit is what the session does when a usage limit holds it
	// (OnLimitWait, OnLimitResume), as its launch asked; "" follows the
	// service's configuration.
	OnLimit string `json:"on_limit,omitempty"`
	// Baseline is what the native session had counted when this run
	// began (a resume), recorded at launch.
	Baseline *Usage `json:"baseline,omitempty"`
	// NativeTotal is the native session's own cumulative count, given when
	// it differs from this run's (a native session several runs share).
	// It is not this session's: never add it up across runs.
	NativeTotal  *Usage     `json:"native_total,omitempty"`
	LastActivity *time.Time `json:"last_activity,omitempty"`
	Prompt       string     `json:"prompt,omitempty"`
	// Activity is busy, idle or waiting (ActivityBusy...), "" when no
	// evidence says; ActivitySource names the evidence that decided it and
	// ActivitySince when it began, where known.
	Activity       string     `json:"activity,omitempty"`
	ActivitySource string     `json:"activity_source,omitempty"`
	ActivitySince  *time.Time `json:"activity_since,omitempty"`
	// WaitingFor is what a waiting session waits for (WaitingPermission,
	// WaitingQuestion, WaitingInput), and Waiting the details.
	WaitingFor string   `json:"waiting_for,omitempty"`
	Waiting    *Waiting `json:"waiting,omitempty"`
	// LimitWindows are the provider account's usage windows as the
	// session's records last gave them (Codex's rate-limit snapshot).
	LimitWindows []LimitWindow `json:"limit_windows,omitempty"`
	// Title is the window title the program last set (OSC 0/2), as seen by
	// the session's monitor.
	Title string `json:"title,omitempty"`
	// Resources is what the session costs the machine (a session this
	// service started): in status, and in a list that asks for it.
	Resources *Resources `json:"resources,omitempty"`

	Labels map[string]string `json:"labels,omitempty"`
	// EnvSet names the variables the session was given with --env; a
	// restart sets them again to the same values.
	EnvSet []string `json:"env_set,omitempty"`
	// RestartOf is the session this one is a restart of.
	RestartOf string `json:"restart_of,omitempty"`
	// LaunchedFrom lists the sessions this one was started from (from a
	// process inside them), at any depth. None of them may answer its
	// prompts, nor it theirs.
	LaunchedFrom []string `json:"launched_from,omitempty"`
	// Hooks are the session's lifecycle hook runs, where it has hooks.
	Hooks []HookRun `json:"hooks,omitempty"`
	// Limits are the bounds the session's cgroup puts on it.
	Limits *Limits `json:"limits,omitempty"`
	// OOM says the kernel's OOM killer ended a process of the session (it
	// reached its memory limit): an ended session that had a cgroup.
	OOM bool `json:"oom,omitempty"`
	// StoppedProcesses is, in a stop's answer, how many processes the
	// session had when the stop began: those it ended.
	StoppedProcesses *int `json:"stopped_processes,omitempty"`
	// Queue is, for a queued session, its place and why it waits.
	Queue *QueuePlace `json:"queue,omitempty"`
	// Warnings explains why a field is unknown or a record was odd.
	Warnings []string `json:"warnings,omitempty"`
}

// QueuePlace is where a queued session stands and what holds it.
type QueuePlace struct {
	// Position is 1 for the next to start.
	Position int `json:"position"`
	// Reason says what holds it now, in words: "2 of 2 sessions run (cap
	// \"global\")", "MemAvailable 1.2 GiB below the floor 4 GiB",
	// "anthropic five_hour limit until 15:00".
	Reason string `json:"reason,omitempty"`
	// Since is when it was queued.
	Since time.Time `json:"since"`
}

// Limits bound what a session may use, through its cgroup; zero fields
// are no bound.
type Limits struct {
	MemoryMaxBytes int64   `json:"memory_max_bytes,omitempty"`
	CPUs           float64 `json:"cpus,omitempty"`
	PidsMax        int64   `json:"pids_max,omitempty"`
}

// Zero reports whether l bounds nothing.
func (l Limits) Zero() bool { return l == Limits{} }

// Usage is a count of tokens and cost; nil fields are unknown.
type Usage struct {
	TokensIn  *int64   `json:"tokens_in,omitempty"`
	TokensOut *int64   `json:"tokens_out,omitempty"`
	CostUSD   *float64 `json:"cost_usd,omitempty"`
}

// HeaderListCount is the response header in which the service announces
// at most how many sessions a list holds, before them (the list is
// written as it is made): a hint the client sizes the list with.
const HeaderListCount = "Agentctl-List-Count"

// SessionList is the answer to a list query. Warnings name what could not be
// read (a corrupt record, an adapter that failed); they never hide sessions
// that were read.
type SessionList struct {
	Sessions []Session `json:"sessions"`
	Warnings []string  `json:"warnings,omitempty"`
	// Machine is the host's load and memory, in a list that asked for
	// resources.
	Machine *Machine `json:"machine,omitempty"`
}

// RunRequest asks the service to start a session.
type RunRequest struct {
	Adapter string   `json:"adapter,omitempty"` // "" or "exec" for a plain command
	Command []string `json:"command,omitempty"`
	Prompt  string   `json:"prompt,omitempty"`
	Model   string   `json:"model,omitempty"`
	// Cwd is absolute; "" is the service user's home (a caller on
	// another host has no directory there).
	Cwd string `json:"cwd"`
	// Env is the caller's whole environment ("K=V"); a service started by an
	// init system has almost none of its own. Null (a caller on another
	// host) is the service's own.
	Env []string `json:"env"`
	// EnvOverrides are --env values applied on top of Env.
	EnvOverrides []string          `json:"env_overrides,omitempty"`
	Name         string            `json:"name,omitempty"`
	Group        string            `json:"group,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Rows         uint16            `json:"rows,omitempty"`
	Cols         uint16            `json:"cols,omitempty"`
	// Interactive runs the agent's own interactive interface with the
	// prompt as its first message (a person answers its prompts), rather
	// than headless.
	Interactive bool `json:"interactive,omitempty"`
	// PermissionMode is what the agent may do without asking (one of
	// PermissionModes), mapped onto the agent's own flags; "" keeps the
	// adapter's default (each documents it in launch --help).
	PermissionMode string `json:"permission_mode,omitempty"`
	// AgentArgs are passed to the agent as given, after agentctl's own
	// flags (launch ADAPTER -- ARGS...).
	AgentArgs []string `json:"agent_args,omitempty"`
	// Image is the container image of a session on a Kubernetes cluster
	// (default: the cluster host's image); a service on a machine has no
	// use for one.
	Image string `json:"image,omitempty"`
	// ResumeOf is the agentctl id whose native session this run continues.
	ResumeOf string `json:"resume_of,omitempty"`
	// RestartOf is the agentctl id this run repeats (agentctl restart).
	RestartOf string `json:"restart_of,omitempty"`

	// Lock asks a plain command for the directory lock agents always take.
	Lock bool `json:"lock,omitempty"`
	// Force starts even in a locked directory, or while a usage limit of
	// the provider holds.
	Force bool `json:"force,omitempty"`
	// OnCreate and OnComplete are lifecycle hooks, run by /bin/sh -c in the
	// session's directory; HookTimeout bounds each (Go duration, default 5m).
	OnCreate    string `json:"on_create,omitempty"`
	OnComplete  string `json:"on_complete,omitempty"`
	HookTimeout string `json:"hook_timeout,omitempty"`
	// Limits bound the session through a cgroup of its own (--memory-max,
	// --cpus, --pids-max); a field left zero takes the adapter's limit in
	// the service's configuration. A service that cannot enforce a limit
	// refuses the launch.
	Limits *Limits `json:"limits,omitempty"`
	// Queue asks that a launch admission holds back be queued (status
	// queued, started in order when admitted) rather than refused.
	Queue bool `json:"queue,omitempty"`
	// OnLimit is what to do when a usage limit holds the session:
	// OnLimitWait (the default: show it, notify) or OnLimitResume (resume
	// the native session after the reset, staggered with the others).
	OnLimit string `json:"on_limit,omitempty"`
}

// What a session does when a usage limit holds it (RunRequest.OnLimit).
const (
	OnLimitWait   = "wait"
	OnLimitResume = "resume"
)

// StopRequest asks the service to stop a session.
type StopRequest struct {
	Force   bool   `json:"force,omitempty"`
	Timeout string `json:"timeout,omitempty"` // Go duration; "" means the default grace
}

// RestartRequest runs a launched session again: the same command, working
// directory, adapter, prompt, model, name, group, labels and --env values,
// as a new session linked to the old one by restart_of. A running session
// is stopped first, as Stop would.
type RestartRequest struct {
	// Env is the caller's environment, under the old session's --env
	// values (kept in its folder, mode 0600).
	Env  []string    `json:"env"`
	Stop StopRequest `json:"stop"`
}

// RemoveRequest removes a session's folder: its records and output log.
type RemoveRequest struct {
	// Force stops a running session first (SIGKILL at once).
	Force bool `json:"force,omitempty"`
}

// InputRequest writes bytes to a session's terminal.
type InputRequest struct {
	Data []byte `json:"data"` // base64 in JSON
}

// PruneRequest removes ended sessions' folders.
type PruneRequest struct {
	OlderThan string `json:"older_than,omitempty"` // Go duration
	// DryRun names what would be removed, and removes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// PruneResult lists what was removed.
type PruneResult struct {
	Removed []string `json:"removed"`
}

// DaemonStatus describes the running service.
type DaemonStatus struct {
	PID             int     `json:"pid"`
	Version         string  `json:"version"`
	Socket          string  `json:"socket"`
	Home            string  `json:"home"`
	UptimeS         float64 `json:"uptime_s"`
	SessionsRunning int     `json:"sessions_running"`
	// Watch says how the agents' stores are followed between queries;
	// absent when the service does not say.
	Watch *WatchStatus `json:"watch,omitempty"`
	// Reading, while the adapters read their stores (a first read of a
	// large store takes seconds), says how far they got; absent otherwise.
	Reading *ReadingStatus `json:"reading,omitempty"`
	// Cgroups says whether each session gets a cgroup of its own (limits,
	// a stop nothing escapes), and where, or why not; absent when the
	// service does not say.
	Cgroups *CgroupStatus `json:"cgroups,omitempty"`
	// Web says where the service serves the web dashboard (config.json's
	// "web"), or why it does not; absent when it is not asked to.
	Web *WebStatus `json:"web,omitempty"`
	// Admission is the admission policy in force (config.json's
	// "admission") and how many sessions wait in its queue; absent when
	// it admits everything and nothing waits.
	Admission *AdmissionStatus `json:"admission,omitempty"`
}

// AdmissionStatus is the admission policy in force and its queue.
type AdmissionStatus struct {
	Policy Admission `json:"policy"`
	Queued int       `json:"queued"`
}

// WebStatus says where the service serves the web dashboard. It never
// holds the token: `agentctl web` prints the address to open.
type WebStatus struct {
	// URL is the dashboard's address, without its token.
	URL string `json:"url,omitempty"`
	// Fingerprint is the SHA-256 fingerprint of its certificate, with TLS.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Error says why it is not served (a refused setting, a taken port).
	Error string `json:"error,omitempty"`
}

// CgroupStatus says whether the service gives each session a cgroup.
type CgroupStatus struct {
	Enabled bool `json:"enabled"`
	// Reason says why not.
	Reason string `json:"reason,omitempty"`
	// V2 is the cgroup2 directory the sessions' cgroups are made in.
	V2 string `json:"v2,omitempty"`
	// V1 names, per controller cgroup2 lacks here, the v1 directory used.
	V1 map[string]string `json:"v1,omitempty"`
	// Controllers are what limits may use: memory, pids, cpu.
	Controllers []string `json:"controllers,omitempty"`
	// Summary is the line daemon status shows.
	Summary string `json:"summary"`
}

// ReadingStatus is how far the adapters' reading of their stores got: the
// sessions read of those found so far (more may be found as it goes).
type ReadingStatus struct {
	Found int64 `json:"found"`
	Read  int64 `json:"read"`
}

// WatchStatus says how the service learns that the agents' stores
// changed: by watching their folders (inotify), or by stat on every query.
type WatchStatus struct {
	// Mode is "inotify", or "stat" when no folder is watched (Reason says
	// why).
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
	// Folders is how many folders are watched.
	Folders int `json:"folders"`
	// Unwatched is how many folders could not be watched and are read by
	// stat on every query; Failures names some of them.
	Unwatched int            `json:"unwatched"`
	Failures  []WatchFailure `json:"failures,omitempty"`
	// Overflows counts the kernel's event queue overflowing (each time,
	// every folder was read again by stat once).
	Overflows    int        `json:"overflows"`
	LastOverflow *time.Time `json:"last_overflow,omitempty"`
	// Limit is the system's limit on watches per user, 0 when unknown.
	Limit int `json:"limit,omitempty"`
}

// WatchFailure is a folder that could not be watched, and why.
type WatchFailure struct {
	Folder string `json:"folder"`
	Reason string `json:"reason"`
}

// LogChunk is one NDJSON message of a log stream. Text carries stripped
// lines, one or more, joined by newlines (no final newline); Data carries
// raw bytes (base64 in JSON), or the stripped text when asked for with
// LogOptions.TextAsData. Either is at most about 64 KiB; a stripped line
// longer than 64 KiB comes cut into lines of at most 64 KiB. A Partial
// chunk is the unfinished last line as it stands so far (asked for with
// LogOptions.Partial): the next chunk repeats it, longer or finished. The
// last message of a followed stream has End set and the session's final
// state.
type LogChunk struct {
	Text    string `json:"text,omitempty"`
	Data    []byte `json:"data,omitempty"`
	Partial bool   `json:"partial,omitempty"`
	// Cursor is where a stream that broke off continues (LogOptions.After),
	// in a message of its own.
	Cursor  string   `json:"cursor,omitempty"`
	End     bool     `json:"end,omitempty"`
	Session *Session `json:"session,omitempty"`
}

// Message is one transcript entry for peek.
type Message struct {
	Role string     `json:"role"`
	Text string     `json:"text"`
	Time *time.Time `json:"time,omitempty"`
}

// Transcript is the answer to peek. Source says where it came from:
// "native" (the agent's own store) or "log" (the output log, for sessions
// whose agent wrote nothing readable yet).
type Transcript struct {
	Session  Session   `json:"session"`
	Source   string    `json:"source"`
	Messages []Message `json:"messages"`
	Warnings []string  `json:"warnings,omitempty"`
}

// ExecAdapter is the adapter name of a plain command.
const ExecAdapter = "exec"

// ListOptions narrow a list. The zero value lists running sessions.
type ListOptions struct {
	// All adds sessions that ended within Since.
	All     bool
	Status  string
	Adapter string
	Group   string
	// Labels are KEY=VALUE pairs a session must carry.
	Labels []string
	// Since bounds how long ago an ended session may have ended (default 7 days).
	Since time.Duration
	// Waiting keeps only waiting sessions, longest waiting first.
	Waiting bool
	// Resources samples what each running session this service started
	// costs (Session.Resources), and the machine's load and memory.
	Resources bool
	// Table asks for what the session table (list without -o wide) shows
	// of each session and no more (Session.TableRow): a fifth less to
	// write and read over a large store. A service that does not know it
	// sends whole sessions, which show the same.
	Table bool
}

// Query encodes o as URL query parameters.
func (o ListOptions) Query() url.Values {
	q := url.Values{}
	if o.All {
		q.Set("all", "1")
	}
	if o.Status != "" {
		q.Set("status", o.Status)
	}
	if o.Adapter != "" {
		q.Set("adapter", o.Adapter)
	}
	if o.Group != "" {
		q.Set("group", o.Group)
	}
	for _, l := range o.Labels {
		q.Add("label", l)
	}
	if o.Since != 0 {
		q.Set("since", o.Since.String())
	}
	if o.Waiting {
		q.Set("waiting", "1")
	}
	if o.Resources {
		q.Set("resources", "1")
	}
	if o.Table {
		q.Set("view", "table")
	}
	return q
}

// ParseListOptions decodes what Query encodes.
func ParseListOptions(q url.Values) (ListOptions, error) {
	o := ListOptions{All: q.Get("all") == "1", Status: q.Get("status"), Adapter: q.Get("adapter"), Group: q.Get("group"), Labels: q["label"], Waiting: q.Get("waiting") == "1", Resources: q.Get("resources") == "1", Table: q.Get("view") == "table"}
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return o, Errorf(CodeInvalid, "since %s: want a duration such as 24h", text.Quote(v))
		}
		o.Since = d
	}
	return o, nil
}

// LogOptions select what a log stream carries.
type LogOptions struct {
	// Lines is how many of the last lines to start with (0: all).
	Lines int
	// Raw asks for the terminal's bytes rather than escape-stripped lines.
	Raw bool
	// Follow goes on with new output until the session ends.
	Follow bool
	// Color keeps colour sequences (SGR) in the stripped view.
	Color bool
	// Partial sends the unfinished last line of the stripped view as it
	// grows, once the output pauses (LogChunk.Partial).
	Partial bool
	// TextAsData carries the stripped view's text in Data (base64) rather
	// than Text: JSON escapes every line end of Text, base64 is several
	// times faster to encode and decode.
	TextAsData bool
	// Cursors asks for a cursor message (LogChunk.Cursor, nothing else)
	// after each read of a followed log: where After continues.
	Cursors bool
	// After continues a followed log at a cursor a previous stream gave,
	// instead of starting with the last Lines lines.
	After string
	// Since starts with the output written at or after this time (RFC
	// 3339), as the log's time marks say (to the second); Lines then
	// bounds what is shown of it.
	Since string
	// Until ends the text view before the first line written at or after
	// this time (RFC 3339), as the log's time marks say (to the second);
	// Lines then bounds what is shown of what came before.
	Until string
	// Timestamps prefixes each line of the stripped view with the time it
	// was written, from the log's time marks.
	Timestamps bool
}

// Query encodes o as URL query parameters.
func (o LogOptions) Query() url.Values {
	q := url.Values{}
	q.Set("n", strconv.Itoa(o.Lines))
	if o.Raw {
		q.Set("raw", "1")
	}
	if o.Follow {
		q.Set("follow", "1")
	}
	if o.Color {
		q.Set("color", "1")
	}
	if o.Partial {
		q.Set("partial", "1")
	}
	if o.TextAsData {
		q.Set("text_as_data", "1")
	}
	if o.Cursors {
		q.Set("cursors", "1")
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	if o.Since != "" {
		q.Set("since", o.Since)
	}
	if o.Until != "" {
		q.Set("until", o.Until)
	}
	if o.Timestamps {
		q.Set("timestamps", "1")
	}
	return q
}

// ParseLogOptions decodes what Query encodes.
func ParseLogOptions(q url.Values) (LogOptions, error) {
	o := LogOptions{Raw: q.Get("raw") == "1", Follow: q.Get("follow") == "1", Color: q.Get("color") == "1", Partial: q.Get("partial") == "1",
		TextAsData: q.Get("text_as_data") == "1", Cursors: q.Get("cursors") == "1", After: q.Get("after"),
		Since: q.Get("since"), Until: q.Get("until"), Timestamps: q.Get("timestamps") == "1"}
	if o.Since != "" {
		if _, err := time.Parse(time.RFC3339Nano, o.Since); err != nil {
			return o, Errorf(CodeInvalid, "since %s: want an RFC 3339 time", text.Quote(o.Since))
		}
	}
	if o.Until != "" {
		if _, err := time.Parse(time.RFC3339Nano, o.Until); err != nil {
			return o, Errorf(CodeInvalid, "until %s: want an RFC 3339 time", text.Quote(o.Until))
		}
		if o.Raw || o.Follow {
			return o, Errorf(CodeInvalid, "until ends the text view's lines, without raw or follow")
		}
	}
	if o.Timestamps && o.Raw {
		return o, Errorf(CodeInvalid, "timestamps are for the text view, not raw bytes")
	}
	if v := q.Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, Errorf(CodeInvalid, "lines %s: want a whole number, 0 for all", text.Quote(v))
		}
		o.Lines = n
	}
	return o, nil
}

// TablePromptRunes is how much of a prompt the session table shows
// without -o wide: its first line's worth, made one line.
const TablePromptRunes = 100

// TableRow is what the session table shows of s (without -o wide): its
// id and handle, adapter, status and how it ended, activity, times,
// model, totals, group, directory, and its name, else its prompt (cut
// past the first TablePromptRunes+1 characters that are not white space:
// the table never shows more of it), else its command.
func (s *Session) TableRow() Session {
	r := Session{ID: s.ID, Handle: s.Handle, Host: s.Host, Adapter: s.Adapter, Status: s.Status, ExitCode: s.ExitCode, Signal: s.Signal,
		Queue: s.Queue, Activity: s.Activity, WaitingFor: s.WaitingFor, CreatedAt: s.CreatedAt, EndedAt: s.EndedAt, LastActivity: s.LastActivity,
		Model: s.Model, TokensIn: s.TokensIn, TokensOut: s.TokensOut, CostUSD: s.CostUSD, TotalsPending: s.TotalsPending,
		Group: s.Group, Cwd: s.Cwd, Name: s.Name, Command: s.Command}
	if s.Name == "" {
		r.Prompt = cutPrompt(s.Prompt, TablePromptRunes+1)
	}
	return r
}

// cutPrompt is s up to and with its nth character that is not white
// space: made one line and cut to fewer, it reads as s does.
func cutPrompt(s string, n int) string {
	for i := 0; i < len(s); {
		// ASCII, most of a prompt, byte by byte: decoding each rune was a
		// fifth of the service's time for a table of 7,000 sessions.
		if c := s[i]; c < utf8.RuneSelf {
			i++
			if c == ' ' || '\t' <= c && c <= '\r' {
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			if unicode.IsSpace(r) {
				continue
			}
		}
		if n--; n == 0 {
			return s[:i]
		}
	}
	return s
}

// ExitStatus is how a shell would report the session's end: its exit code,
// or 128+n for death by signal n. ok is false while neither is known.
func (s Session) ExitStatus() (status int, ok bool) {
	switch {
	case s.ExitCode != nil:
		return *s.ExitCode, true
	case s.Signal != "":
		if n := unix.SignalNum(s.Signal); n != 0 {
			return 128 + int(n), true
		}
	}
	return 0, false
}

// ActiveAt is when the session last did something, as far as anyone knows:
// its agent's last recorded activity, else its end; zero when neither is
// known.
func (s Session) ActiveAt() time.Time {
	if s.LastActivity != nil {
		return *s.LastActivity
	}
	if s.EndedAt != nil {
		return *s.EndedAt
	}
	return time.Time{}
}

// SignalRequest sends one signal to a session's process group (kill -s),
// with no grace period and no SIGKILL after.
type SignalRequest struct {
	// Signal is a name (HUP, SIGHUP) or a number.
	Signal string `json:"signal"`
}

// RenameRequest gives a session a new name.
type RenameRequest struct {
	Name string `json:"name"`
}

// Agents are the agents agentctl launches, by the names launch and run
// --adapter take (ExecAdapter, a plain command, aside).
func Agents() []string { return []string{"claude", "codex", "opencode", "pi", "pi-rust"} }

// PermissionModes are the values of RunRequest.PermissionMode, by Claude
// Code's names for them: ask for everything but reading (default), edit
// files without asking (acceptEdits), read only (plan), or do anything
// without asking (bypassPermissions).
func PermissionModes() []string {
	return []string{"default", "acceptEdits", "plan", "bypassPermissions"}
}
