package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/hosts"
)

func newKillCmd(cli *cli) *cobra.Command {
	var signal string
	var asJSON bool
	var sel selection
	cmd := &cobra.Command{
		Use:   "kill [-s SIGNAL] ID|NAME... | --all | --group G | --label K=V",
		Short: "Send a signal to sessions (without -s: kill them and every process they started)",
		Long: `With -s, send that one signal to each session's process group and return:
no grace period and no SIGKILL after (kill -s HUP to make a server reload,
-s INT to interrupt an agent's turn). The session goes on unless the signal
ends it.

Without -s, kill is 'stop --force': SIGKILL at once to the session's process
group and every descendant, including tool commands that moved to sessions
of their own.`,
		Example: `  agentctl kill -s HUP web
  agentctl kill -s INT k3x9
  agentctl kill k3x9`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if signal == "" {
				return onTargets(cli, cmd, a, &sel, running, "kill", asJSON, false, stopOn(api.StopRequest{Force: true}))
			}
			return onTargets(cli, cmd, a, &sel, running, "kill", asJSON, false, signalOn(api.SignalRequest{Signal: signal}))
		},
	}
	cmd.Flags().StringVarP(&signal, "signal", "s", "", "the `SIGNAL` to send: a name (HUP, SIGTERM) or a number")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	sel.register(cli, cmd, "every running session agentctl launched")
	return cmd
}

// signalOn sends a signal to a session, where the host can.
func signalOn(req api.SignalRequest) act {
	return func(ctx context.Context, h hosts.Host, id string) (api.Session, error) {
		s, ok := h.API.(hosts.Signaler)
		if !ok {
			return api.Session{}, cannot(h, fmt.Sprintf("send signals (kill -s %s)", req.Signal))
		}
		return s.Signal(ctx, id, req)
	}
}
