package orchestrate

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentctl/agentctl/api"
)

// ErrUsage marks a plan the command line cannot make: its flags contradict
// each other or name what does not exist. The CLI exits with its usage
// status for it.
var ErrUsage = errors.New("usage")

type usage struct {
	msg string
	err error // what it comes from, if anything
}

func (u *usage) Error() string        { return u.msg }
func (u *usage) Unwrap() error        { return u.err }
func (u *usage) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error {
	return &usage{msg: fmt.Sprintf(format, args...)}
}

// PlanInput is what a launch or run command line asks for, as its flags
// give it.
type PlanInput struct {
	// Command is the command's name, for messages.
	Command string
	// Positional is launch's ADAPTER argument; DefaultAdapter the adapter
	// when none is named.
	Positional     string
	DefaultAdapter string
	// Adapters are the --adapter flags in order, each with the --model
	// that followed it; Model is a --model given before any.
	Adapters []Member
	Model    string
	// Matrix is a matrix file's path; Home the user's home, for "~" in it.
	Matrix string
	Home   string
	// Args are what follows --: run's COMMAND, or an agent's own
	// arguments.
	Args           []string
	Prompt         string
	PermissionMode string
	// Worktree is --worktree REPO; CwdGiven says --cwd was given.
	Worktree   string
	CwdGiven   bool
	Branch     string
	BaseBranch string
	Group      string
	// Spec, Files and MaxFileSize (as typed: 50k) are the context files.
	Spec        string
	Files       []string
	MaxFileSize string
	// Wait follows the session to its end (run --wait).
	Wait bool
	// Remote says the sessions start on another host.
	Remote bool
}

// Plan is what a launch or run command line starts: one session, one
// session in a worktree, or a group of members each in its own worktree.
// The CLI parses flags into a PlanInput and prints what the plan started;
// every rule between the two is here.
type Plan struct {
	// Members are the sessions to start, in order.
	Members []Member
	// Group: several members, or a matrix file; each member then gets its
	// own worktree.
	Group bool
	// Worktrees: the members start in worktrees (a group, or --worktree).
	Worktrees bool
	// Adapter and Model are the one member's ("" for several): what the
	// request the plan completes is built for.
	Adapter, Model string
	// Prompt is the prompt given, else the matrix file's.
	Prompt string
	// Command is a plain command's argv; AgentArgs an agent's own
	// arguments.
	Command, AgentArgs []string
	// Warnings are what the matrix file holds that is not acted on.
	Warnings []string

	in      PlanInput
	matrix  *Matrix
	spec    string
	maxSize int64
}

// NewPlan checks a command line's flags against each other and decides what
// it starts. A plan it refuses still holds the matrix file's warnings.
func NewPlan(in PlanInput) (Plan, error) {
	p := Plan{in: in, Prompt: in.Prompt, maxSize: DefaultMaxFileSize}
	if err := p.members(); err != nil {
		return p, err
	}
	p.Group = len(p.Members) > 1 || p.matrix != nil
	p.Worktrees = p.Group || in.Worktree != ""
	for _, step := range []func() error{p.arguments, p.context, p.placement} {
		if err := step(); err != nil {
			return p, err
		}
	}
	if len(p.Members) == 1 {
		p.Adapter, p.Model = p.Members[0].Adapter, p.Members[0].Model
	}
	return p, nil
}

// members decides the members: launch's ADAPTER, the --adapter flags, a
// matrix file, or the default adapter; each with its model.
func (p *Plan) members() error {
	in := p.in
	p.Members = in.Adapters
	if in.Positional != "" {
		if len(p.Members) > 0 {
			return usagef("%s: give the adapter as the argument or with --adapter, not both", in.Command)
		}
		p.Members = []Member{{Adapter: in.Positional, Model: in.Model}}
	}
	if in.Matrix != "" {
		if len(p.Members) > 0 || in.Model != "" {
			return usagef("%s: --matrix lists the adapters and models; do not also give --adapter, --model or an ADAPTER argument", in.Command)
		}
		m, err := LoadMatrix(in.Matrix, in.Home)
		if err != nil {
			return &usage{msg: fmt.Sprintf("matrix file: %v", err), err: err}
		}
		p.Warnings = m.Warnings
		p.Members, p.matrix = m.Members(), &m
		if p.Prompt == "" {
			p.Prompt = m.Prompt
		}
	}
	switch {
	case len(p.Members) == 0:
		p.Members = []Member{{Adapter: in.DefaultAdapter, Model: in.Model}}
	case in.Model != "" && in.Positional == "":
		// --model came before the first --adapter.
		if len(p.Members) > 1 || p.Members[0].Model != "" {
			return usagef("%s: --model must follow the --adapter it is for", in.Command)
		}
		p.Members[0].Model = in.Model
	}
	return nil
}

// isExec says whether a member runs a plain command rather than an agent.
func isExec(adapter string) bool { return adapter == "" || adapter == api.ExecAdapter }

// firstAgent is the adapter of the first member that is an agent ("" when
// every member is a plain command), and whether any member is one.
func (p *Plan) firstAgent() (agent string, hasExec bool) {
	for _, m := range p.Members {
		if isExec(m.Adapter) {
			hasExec = true
		} else if agent == "" {
			agent = m.Adapter
		}
	}
	return agent, hasExec
}

// arguments decides what follows --: a plain command, or one kind of
// agent's own arguments.
func (p *Plan) arguments() error {
	in := p.in
	firstAgent, hasExec := p.firstAgent()
	p.Command = in.Args
	switch {
	case hasExec && len(in.Args) == 0:
		return usagef("%s: no command given: agentctl run [flags] -- COMMAND [ARGS...]", in.Command)
	case !hasExec && len(in.Args) > 0:
		// After -- an agent's own arguments, for one kind of agent.
		for _, m := range p.Members {
			if m.Adapter != firstAgent {
				return usagef("%s: arguments after -- go to one agent's command line; the members are %s and %s", in.Command, firstAgent, m.Adapter)
			}
		}
		p.AgentArgs, p.Command = in.Args, nil
	case hasExec && in.PermissionMode != "":
		return usagef("%s: --permission-mode is for agents; a plain command's permissions are its own", in.Command)
	}
	// One agent without a prompt is its interactive interface; a group's
	// members all work on the one prompt.
	if firstAgent != "" && p.Prompt == "" && p.Group {
		return usagef("%s: a group needs a prompt (-p PROMPT)", in.Command)
	}
	return nil
}

// context decides the context files put in front of the prompt.
func (p *Plan) context() error {
	in := p.in
	p.spec = in.Spec
	if p.spec == "" && p.matrix != nil {
		p.spec = p.matrix.Spec
	}
	if firstAgent, _ := p.firstAgent(); firstAgent == "" && (p.spec != "" || len(in.Files) > 0) {
		return usagef("%s: --file and --spec add to an agent's prompt; a plain command has none", in.Command)
	}
	return nil
}

// placement checks where the members start (worktrees, branches, the
// group, the host) and the size limit of the context files.
func (p *Plan) placement() error {
	in := p.in
	if !p.Worktrees && (in.Branch != "" || in.BaseBranch != "") {
		return usagef("%s: --branch and --base-branch need --worktree REPO (or several members)", in.Command)
	}
	if in.Worktree != "" && in.CwdGiven {
		return usagef("%s: --cwd and --worktree both say where to work; give one (members start in the worktree's copy of the folder you name)", in.Command)
	}
	if in.Group != "" && !ValidGroup(in.Group) {
		return usagef("%s: --group %q: use letters, digits, '-', '_' and '.' (at most 64)", in.Command, in.Group)
	}
	if p.Group && in.Wait {
		return usagef("%s: --wait follows one session; a group has %d (follow them with 'agentctl group status')", in.Command, len(p.Members))
	}
	if in.MaxFileSize != "" {
		n, err := ParseSize(in.MaxFileSize)
		if err != nil {
			return &usage{msg: fmt.Sprintf("--max-file-size: %v", err), err: err}
		}
		p.maxSize = n
	}
	if in.Remote && (p.Worktrees || p.spec != "" || len(in.Files) > 0) {
		return usagef("%s: worktrees and context files are made from this machine's folders; on another host, run agentctl there (ssh HOST agentctl …)", in.Command)
	}
	return nil
}

// Request completes the plan with the request the command line's other
// flags built for its one member (req: its environment, directory,
// labels, model from config.json): the command or the agent's arguments,
// the matrix file's directory, the context files in front of the prompt.
// Without worktrees, the Template of the result is the one session to
// start; with them, the result is for Launch.
func (p Plan) Request(req api.RunRequest) (Request, error) {
	in := p.in
	req.Command, req.AgentArgs = p.Command, p.AgentArgs
	members := append([]Member(nil), p.Members...)
	if len(members) == 1 && p.matrix == nil {
		// The request may have taken the model from config.json (a matrix
		// names its models itself).
		members[0].Model = req.Model
	}
	if p.matrix != nil && p.matrix.Cwd != "" && !in.CwdGiven {
		req.Cwd = p.matrix.Cwd
	}
	dir := req.Cwd
	if in.Worktree != "" {
		abs, err := filepath.Abs(in.Worktree)
		if err != nil {
			return Request{}, fmt.Errorf("resolve %s: %w", in.Worktree, err)
		}
		dir = abs
	}
	ctxFiles := ContextFiles{Dir: dir, Spec: p.spec, Files: in.Files, MaxFileSize: p.maxSize}
	var err error
	if req.Prompt, err = ctxFiles.Prompt(req.Prompt); err != nil {
		return Request{}, err
	}
	if !p.Worktrees {
		req.Group = in.Group
		return Request{Group: in.Group, Members: members, Template: req}, nil
	}
	base := in.BaseBranch
	if base == "" && p.matrix != nil {
		base = p.matrix.BaseBranch
	}
	return Request{Group: in.Group, Repo: dir, Branch: in.Branch, Base: base, Members: members, Template: req}, nil
}
