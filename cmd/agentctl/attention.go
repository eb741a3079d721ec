package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

func newApproveCmd(cli *cli) *cobra.Command {
	var request string
	cmd := &cobra.Command{
		Use:   "approve ID [--request REQUEST]",
		Short: "Allow the tool a waiting session asks permission for",
		Long: `Allow the tool a waiting session asks permission for, without attaching.

Works where the agent's own mechanism waits for agentctl's answer: Claude Code
sessions agentctl launched (their PermissionRequest hook waits for it), and
those started by hand once 'agentctl integrate claude' is installed. Other
prompts are answered in the session's terminal (agentctl attach ID, or the
terminal it was started in).

An approval names the request it answers: --request REQUEST (agentctl status
ID shows it). Without --request, the session is read first, the request it
shows now is printed (tool and input) and that one is approved: a request that
replaced it in the meantime is not.

Only the session's owner (or root) may answer, never a process of the session
itself, nor of a session started from inside it or that it was started from.
Every answer is recorded in the session's decisions.jsonl.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return decide(cmd.Context(), cli, a[0], api.Decision{Action: api.DecisionApprove, Request: request})
		},
	}
	cmd.Flags().StringVar(&request, "request", "", "the request to approve (default: the one the session shows now)")
	return cmd
}

func newDenyCmd(cli *cli) *cobra.Command {
	var reason, request string
	cmd := &cobra.Command{
		Use:   "deny ID [--request REQUEST]",
		Short: "Refuse the tool a waiting session asks permission for",
		Long: `Refuse the tool a waiting session asks permission for; --reason is passed to
the agent, which tells its model. See 'agentctl approve --help' for where this
works and who may.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return decide(cmd.Context(), cli, a[0], api.Decision{Action: api.DecisionDeny, Reason: reason, Request: request})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the agent")
	cmd.Flags().StringVar(&request, "request", "", "the request to deny (default: the one the session shows now)")
	return cmd
}

func newAnswerCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "answer ID TEXT...",
		Short: "Answer a waiting session's question, or give it the next instruction",
		Long: `Type TEXT into the session's terminal, then Enter: the answer to its question,
or the next instruction to an agent waiting at its prompt. Recorded in the
session's decisions.jsonl; only its owner (or root) may, never the session's
own processes.`,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return decide(cmd.Context(), cli, a[0], api.Decision{Action: api.DecisionAnswer, Text: strings.Join(a[1:], " ")})
		},
	}
}

// decideOn answers a waiting session of host h, where the host can.
func decideOn(ctx context.Context, h hosts.Host, id string, d api.Decision) (api.Session, error) {
	dec, ok := h.API.(hosts.Decider)
	if !ok {
		return api.Session{}, cannot(h, "answer waiting sessions ("+string(d.Action)+")")
	}
	return dec.Decide(ctx, id, d)
}

func decide(ctx context.Context, cli *cli, id string, d api.Decision) error {
	h, id, err := cli.hostFor(id)
	if err != nil {
		return err
	}
	if (d.Action == api.DecisionApprove || d.Action == api.DecisionDeny) && d.Request == "" {
		// What is answered is what the person sees now, named by its id:
		// a request that replaces it before the answer arrives is not.
		s, err := h.API.Get(ctx, id)
		if err != nil {
			return err
		}
		id = s.ID
		// Nothing to name: the service says why nothing can be answered.
		if w := s.Waiting; s.Activity == api.ActivityWaiting && w != nil && w.Request != "" {
			fmt.Fprintf(cli.errOut, "%s %s request %s: %s\n", d.Action, shortID(s.ID), text.Clean(w.Request), text.Clean(w.Summary()))
			d.Request = w.Request
		}
	}
	s, err := decideOn(ctx, h, id, d)
	if err != nil {
		return err
	}
	done := map[string]string{api.DecisionApprove: "approved", api.DecisionDeny: "denied", api.DecisionAnswer: "answered"}[d.Action]
	if a := activityText(&s); a != "" && a != "-" {
		fmt.Fprintf(cli.out, "%s %s (now %s)\n", done, shortID(s.ID), a)
	} else {
		fmt.Fprintf(cli.out, "%s %s\n", done, shortID(s.ID))
	}
	return nil
}

// newHookCmd is what an agent's hooks run: those agentctl writes into the
// agent's settings when it launches it, and those `agentctl integrate`
// installs for the agents started by hand. It must be fast: the agent
// waits.
func newHookCmd(cli *cli) *cobra.Command {
	var homeDir, event string
	var interactive, integration bool
	cmd := &cobra.Command{
		Use:    "hook AGENT",
		Short:  "Report an agent's hook to the service (run by the agent's hooks)",
		Hidden: true,
		Long: `Read the hook's JSON input on stdin and report it to the agentctl service:
for the session named by $AGENTCTL_SESSION_ID (one agentctl launched), else as
the report of an agent started by hand (agentctl integrate), whose process the
service proves from this hook's parents.

For a permission request the service can answer (Claude Code's
PermissionRequest) it waits for the person's answer (agentctl approve / deny)
and prints the decision: for Claude and Codex, their decision JSON; for the other
agents one line {"behavior":"allow"|"deny","message":...}. An agent started by
hand waits at most config.json's integrate.permission_wait (default 10m; 0s:
no wait). Any failure exits 0 with nothing on stdout, within milliseconds when
the service is down or does not answer: the agent then goes on as usual.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			runHook(cmd.Context(), cli, hookRun{agent: a[0], homeDir: homeDir, event: event, interactive: interactive, integration: integration})
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&homeDir, "home", "", "the agentctl home of the service (default $AGENTCTL_HOME)")
	fl.StringVar(&event, "event", "", "the hook event, when the input does not name it")
	fl.BoolVar(&interactive, "interactive", false, "the session has a person at its prompt between turns")
	fl.BoolVar(&integration, "integration", false, "run by the user-level integration (agentctl integrate): quiet within a session agentctl launched, whose own hooks report")
	return cmd
}

// hookRun is one run of `agentctl hook`.
type hookRun struct {
	agent, homeDir, event    string
	interactive, integration bool
}

// The bounds of an integration's report of an agent started by hand: the
// agent waits for its hook, and must not pay for a service that is down
// (the connection fails at once) or frozen (it accepts into its backlog
// and says nothing).
const (
	hookConnect = 20 * time.Millisecond
	hookAnswer  = 150 * time.Millisecond
)

// permissionEvents are the agents' events whose hook can carry a decision
// back (the service holds them until a person answers); Pi's tool_call
// does when its extension says it waits for one ("ask").
var permissionEvents = map[string]bool{"PermissionRequest": true, "permission.asked": true}

func runHook(ctx context.Context, cli *cli, r hookRun) {
	id := cli.getenv(home.SessionEnv)
	if r.integration && id != "" {
		// An agent agentctl launched: its own hooks (--settings) report,
		// and the user's integration would count everything twice.
		return
	}
	payload, err := io.ReadAll(io.LimitReader(cli.in, api.MaxHookReport+1))
	if err != nil {
		return
	}
	if len(payload) > api.MaxHookReport {
		fmt.Fprintf(cli.errOut, "agentctl hook: a report of more than %d bytes is not sent\n", api.MaxHookReport)
		return
	}
	h := home.Home(r.homeDir)
	if r.homeDir == "" {
		if h, err = cli.home(); err != nil {
			return
		}
	}
	var probe struct {
		Event string `json:"hook_event_name"`
		Ask   bool   `json:"ask"`
	}
	json.Unmarshal(payload, &probe)
	if probe.Event == "" {
		probe.Event = r.event
	}
	permission := permissionEvents[probe.Event] || (r.agent == "pi" && probe.Event == "tool_call" && probe.Ask)
	rep := client.HookReport{Socket: h.Socket(), SessionID: id, Agent: r.agent, Event: r.event, Interactive: r.interactive, Payload: payload}
	switch {
	case id != "" && !permission:
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	case id == "":
		if pid, stopped := serviceStopped(h); stopped {
			fmt.Fprintf(cli.errOut, "agentctl hook: the service (pid %d) is stopped: nothing reported\n", pid)
			return
		}
		wait := time.Duration(0)
		if permission {
			if wait, err = configOf(cli, h).Integrate.WaitFor(r.agent); err != nil {
				fmt.Fprintln(cli.errOut, "agentctl hook:", err)
				wait = 0
			}
		}
		rep.Connect, rep.Answer = hookConnect, hookAnswer
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(wait, hookAnswer))
		defer cancel()
	}
	reply, err := client.ReportHook(ctx, rep)
	if err != nil {
		fmt.Fprintln(cli.errOut, "agentctl hook:", err)
		return
	}
	if reply.Behavior == "" {
		return
	}
	// Codex's PermissionRequest hook reads Claude's decision JSON.
	if r.agent == "claude" || r.agent == "codex" {
		if probe.Event == "PermissionRequest" {
			decision := map[string]any{"behavior": reply.Behavior}
			if reply.Message != "" {
				decision["message"] = reply.Message
			}
			json.NewEncoder(cli.out).Encode(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": decision}})
		}
		return
	}
	json.NewEncoder(cli.out).Encode(reply)
}

// serviceStopped says whether the service of h is stopped by a signal
// (SIGSTOP, SIGTSTP: frozen, it would accept the report and never answer),
// as its lock file names it: a hook then need not wait to learn it.
func serviceStopped(h home.Home) (int, bool) {
	b, err := os.ReadFile(h.LockFile())
	if err != nil || len(b) > 32 {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	p, err := proc.Lookup(pid)
	return pid, err == nil && p.Stopped
}

// activityText is the activity cell: busy, idle, "waiting: permission".
func activityText(s *api.Session) string {
	if s.Activity == api.ActivityWaiting && s.WaitingFor != "" {
		return s.Activity + ": " + s.WaitingFor
	}
	return s.Activity
}

// limitText says which usage limit holds a session and until when:
// "limit anthropic five_hour, resets 15:04 (in 2h3m)".
func limitText(l *api.LimitHold, now time.Time) string {
	s := "limit " + l.Provider
	if l.Account != "" {
		s += " (" + l.Account + ")"
	}
	if l.Window != "" {
		s += " " + l.Window
	}
	if l.ResetsAt != nil {
		s += ", resets " + l.ResetsAt.Local().Format(time.RFC3339)
		if d := l.ResetsAt.Sub(now); d > 0 {
			s += " (in " + d.Round(time.Second).String() + ")"
		}
	} else {
		s += ", reset time not given"
	}
	return s
}

// printActivity adds the attention rows of status.
func printActivity(row func(k, v string), s api.Session) {
	row("activity", activityText(&s))
	row("title", s.Title)
	if w := s.Waiting; w != nil && w.Limit != nil {
		row("held by", limitText(w.Limit, time.Now()))
	}
	if s.Activity == "" {
		return
	}
	src := s.ActivitySource
	if s.ActivitySince != nil {
		src += ", since " + s.ActivitySince.Local().Format(time.RFC3339) + " (" + ago(time.Now(), *s.ActivitySince) + " ago)"
	}
	row("  source", src)
	if w := s.Waiting; w != nil {
		if w.Tool != "" {
			row("  tool", w.Tool)
			row("  input", w.Input)
		}
		row("  text", w.Text)
		if len(w.Options) > 0 {
			row("  options", strings.Join(w.Options, " | "))
		}
		row("  evidence", w.Kind)
		if w.Request != "" {
			row("  request", w.Request)
			row("  answer with", "agentctl approve "+shortID(s.ID)+" --request "+w.Request+" | agentctl deny "+shortID(s.ID)+" --request "+w.Request+" [--reason TEXT]")
		}
	}
}
