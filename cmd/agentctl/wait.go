package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

func newWaitCmd(cli *cli) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait ID|NAME...",
		Short: "Wait for sessions to end and print their exit codes",
		Long: `Wait until each session has ended, then print its exit code, one line per
session in the order given (128+N for a session killed by signal N; 1 when
its end is not known), as docker wait does. A session that has already ended
answers at once.

The exit status is the first non-zero exit code among the sessions, else 0;
with --timeout, 1 once it passes with a session still running (the session
goes on).`,
		Example: `  agentctl wait k3x9
  id=$(agentctl run -- make test) && agentctl wait "$id"`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			first := 0
			for _, handle := range a {
				h, id, err := cli.hostFor(handle)
				if err != nil {
					return err
				}
				final, err := waitEnd(ctx, h.API, id)
				if errors.Is(err, context.DeadlineExceeded) && cmd.Context().Err() == nil {
					return fmt.Errorf("session %s still runs after %s", handle, timeout)
				}
				if err != nil {
					return err
				}
				code := exitCodeOf(final)
				fmt.Fprintln(cli.out, code)
				if first == 0 {
					first = code
				}
			}
			if first != 0 {
				return exitError{code: first}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait for ever)")
	return cmd
}

// waitEnd follows a session until it ends and returns it as it ended. Its
// output is not shown: followed from the last line on, so a long log is
// not sent first.
func waitEnd(ctx context.Context, c client.Sessions, id string) (api.Session, error) {
	var final *api.Session
	err := followLogs(ctx, c, id, api.LogOptions{Lines: 1, Follow: true, Raw: true}, func(ch api.LogChunk) error {
		if ch.End {
			final = ch.Session
		}
		return nil
	})
	if err != nil {
		return api.Session{}, err
	}
	if final == nil {
		return api.Session{}, fmt.Errorf("session %s: the service did not say how it ended", id)
	}
	return *final, nil
}

func newInspectCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect ID|NAME",
		Short: "Print one session as JSON (the same as status --json)",
		Example: `  agentctl inspect k3x9 | jq .status
  agentctl inspect web | jq '.tokens_in, .cost_usd'`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			s, err := h.API.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			return printJSON(cli.out, s)
		},
	}
}
