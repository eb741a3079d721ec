package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/internal/text"
)

func newLimitsCmd(cli *cli) *cobra.Command {
	cmd := readCmd(cli, "limits", "Show the model providers' usage limits and the sessions they hold", (*client.Client).Limits, printLimits)
	cmd.Long = `Show, per model provider (and account where known), each usage window's use
and reset time from the freshest evidence the agents' own records give, and
the sessions a limit holds. A held session ended or waits on its provider's
usage limit; with --on-limit resume (or on_limit in config.json) the service
resumes it after the reset, one session of a provider per interval.`
	return cmd
}

func printLimits(w io.Writer, ps []api.ProviderLimits, now time.Time, to tableOptions) {
	if len(ps) == 0 {
		if !to.noHeaders {
			fmt.Fprintln(w, "No usage limit seen")
		}
		return
	}
	tw := to.newTable(w)
	tw.header("PROVIDER\tWINDOW\tUSED\tRESETS\tHELD\tSESSIONS")
	for _, p := range ps {
		name := p.Provider
		if p.Account != "" {
			name += " (" + p.Account + ")"
		}
		held := "no"
		if p.Held {
			held = "yes"
		}
		sessions := make([]string, 0, len(p.Sessions))
		for _, id := range p.Sessions {
			sessions = append(sessions, shortID(id))
		}
		windows := p.Windows
		if len(windows) == 0 {
			windows = []api.LimitWindow{{}}
		}
		for _, win := range windows {
			used := "-"
			if win.UsedPercent != nil {
				used = fmt.Sprintf("%.0f%%", *win.UsedPercent)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", text.Clean(name), dash(text.Clean(win.Name)), used,
				resetsText(win.ResetsAt, now), held, dash(strings.Join(sessions, ",")))
		}
	}
	tw.Flush()
}

// resetsText is a reset time as tables show it: "15:04 (in 2h3m)", "-"
// when not known.
func resetsText(at *time.Time, now time.Time) string {
	if at == nil {
		return "-"
	}
	s := at.Local().Format("Jan 2 15:04")
	if d := at.Sub(now); d > 0 {
		s += " (in " + d.Round(time.Second).String() + ")"
	}
	return s
}
