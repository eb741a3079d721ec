// Package monitorapi holds what the service and a cluster hand a session's
// monitor and read back from it: the spec a monitor starts from, the launch
// record it writes (launch.json), and the words of a container monitor's
// termination message. Types and constants only, so that a caller that
// starts monitors elsewhere (a cluster's pods) does not link the monitor.
package monitorapi

import (
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/proc"
)

// Spec is what the service hands a shim on its standard input.
type Spec struct {
	Record Record   `json:"record"`
	Env    []string `json:"env"`
	// Path is the program argv[0] names, when the service resolved it
	// already; the monitor resolves it otherwise.
	Path string `json:"path,omitempty"`
	// Stdin is typed into the terminal right after the start.
	Stdin      []byte `json:"stdin,omitempty"`
	LogMaxSize int64  `json:"log_max_size,omitempty"`
	LogFiles   int    `json:"log_files,omitempty"`
	// ServiceLock is the service's lock file, which holds its pid. A
	// service auto-started from inside a session descends from that
	// session's shim (the subreaper), yet is not part of the session: it
	// and everything below it are spared when the session's processes end.
	ServiceLock string `json:"service_lock,omitempty"`
	// Interactive asks for the agent's own interactive interface: read
	// where an agent's argv is built by the monitor (in a cluster's pod).
	Interactive bool `json:"interactive,omitempty"`
	// Cgroup, when set, is the session's own cgroup: the monitor creates
	// it, applies its limits and starts the agent inside it.
	Cgroup *CgroupSpec `json:"cgroup,omitempty"`
}

// CgroupSpec is a session's cgroup: where, and its limits.
type CgroupSpec struct {
	Paths  cgroup.Paths  `json:"paths"`
	Limits cgroup.Limits `json:"limits,omitzero"`
}

// Record is launch.json: what was launched and the process that runs it.
// The shim writes it once, atomically, after the exec succeeded and before
// the start is reported to anyone.
type Record struct {
	ID      string            `json:"id"`
	Adapter string            `json:"adapter"`
	Name    string            `json:"name,omitempty"`
	Group   string            `json:"group,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Argv    []string          `json:"argv"`
	// EnvKeys lists the environment's names only: values may be secrets.
	EnvKeys []string `json:"env_keys,omitempty"`
	// EnvSet names the variables given with --env (their values are in
	// home.EnvFile).
	EnvSet []string `json:"env_set,omitempty"`
	Cwd    string   `json:"cwd"`
	Prompt string   `json:"prompt,omitempty"`
	// PromptCut says Prompt is the head of a longer prompt, kept whole in
	// the session's home.PromptFile.
	PromptCut bool   `json:"prompt_cut,omitempty"`
	Model     string `json:"model,omitempty"`
	// PermissionMode and AgentArgs are what the launch asked of the agent
	// (a restart asks the same).
	PermissionMode string   `json:"permission_mode,omitempty"`
	AgentArgs      []string `json:"agent_args,omitempty"`
	// OnLimit is what the session does when a usage limit holds it
	// (api.OnLimitWait, api.OnLimitResume); "" follows the service's
	// configuration.
	OnLimit string `json:"on_limit,omitempty"`
	// NativeID is the agent's own session id when known at launch.
	NativeID string `json:"native_id,omitempty"`
	// ResumeOf is the agentctl id whose native session this run continues.
	ResumeOf string `json:"resume_of,omitempty"`
	// Baseline is what the native session had counted when a resume
	// began: the run's own tokens and cost are the difference.
	Baseline *api.Usage `json:"baseline,omitempty"`
	// RestartOf is the agentctl id this run repeats.
	RestartOf string `json:"restart_of,omitempty"`
	// LaunchedFrom lists the sessions this one was started from, at any
	// depth (the caller's, and those they were started from): one
	// principal, which cannot answer its own prompts.
	LaunchedFrom []string  `json:"launched_from,omitempty"`
	StopSignal   string    `json:"stop_signal,omitempty"`
	CreatedAt    time.Time `json:"created_at"`

	// The agent: pid, process group and start stamp, first-hand.
	Process proc.Identity `json:"process"`
	PGID    int           `json:"pgid"`
	// The shim that holds the pty and will write exit.json.
	Shim proc.Identity `json:"shim"`
	Rows uint16        `json:"rows"`
	Cols uint16        `json:"cols"`
	// NotesDrawing says the monitor notes when the program first printed
	// text (Terminal.PrintedAt); monitors of older releases do not.
	NotesDrawing bool `json:"notes_drawing,omitempty"`
	// Protocol is the version of the monitor protocol the monitor speaks
	// (spawn's protocol.go); absent in version 1.
	Protocol int `json:"protocol,omitempty"`
	// Limits are the bounds the session's cgroup puts on it, if any.
	Limits *cgroup.Limits `json:"limits,omitempty"`
}

// DefaultGrace is how long a stop waits for the agent's own graceful exit
// before SIGKILL.
const DefaultGrace = 10 * time.Second

// ContainerGrace is the stop grace the monitor asks for in a container: the
// agent's own graceful exit, plus time to write its records.
const ContainerGrace = DefaultGrace + 5*time.Second

// TerminationLog is where a container's last words go (the container's
// terminationMessagePath, Kubernetes' default): the cluster shows them in
// the container's termination state.
const TerminationLog = "/dev/termination-log"

// The lines of a container monitor's termination message: how the agent
// died, when by a signal, and its native session id, when known.
const (
	TerminationSignal   = "signal "
	TerminationNativeID = "native-id "
)
