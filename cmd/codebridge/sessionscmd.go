package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/spf13/cobra"
)

// sessionsCommand lists and ends the sandboxes of session handles on the
// engine: they outlive the bridges that started them, so the engine is
// where they are all found, whichever bridge holds each.
func (c *cli) sessionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions [list|end TAG...]",
		Short: "List or end the sessions with handles whose sandboxes run on the engine (any bridge's)",
		Long: `List or end the sessions with handles (HTTP clients on protocol 2026-07-28,
and forks) whose sandboxes run on the engine. Such a sandbox outlives the
bridge that started it, until its handle is ended or idles out; any bridge of
the engine may hold it. A session is named by its tag (s- and 16 hex digits),
the name runtime.sessions() and the logs give it; a tag is no handle.

  codebridge sessions            list them: tag, principal, state
  codebridge sessions end TAG... end them: their sandboxes, variables and files are removed

A bridge that held an ended session finds its sandbox gone at the next call
there: that call fails saying so, and the handle starts afresh.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 || len(args) == 1 && args[0] == "list":
				return nil
			case len(args) >= 2 && args[0] == "end":
				return nil
			}
			return usageError{"give list, or end TAG..."}
		},
	}
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var s struct {
		Sandbox sandboxFlags
		Log     logFlags
	}
	flags := slices.Concat([]string{"engine", "namespace"}, flagsOf[logFlags]())
	return c.settingsCommand(cmd, &s, flags, commandLogLevel, func(args []string) error {
		return c.withEngine(s.Sandbox, s.Log, func(ctx context.Context, eng sandbox.Engine) error {
			if len(args) > 0 && args[0] == "end" {
				return c.endSessions(ctx, eng, args[1:])
			}
			return c.listSessions(ctx, eng, asJSON)
		})
	})
}

func (c *cli) listSessions(ctx context.Context, eng sandbox.Engine, asJSON bool) error {
	list, err := sandbox.HandleSandboxes(ctx, eng)
	if err != nil {
		return failure{err: err}
	}
	if asJSON {
		out := []map[string]string{}
		for _, h := range list {
			out = append(out, map[string]string{"tag": h.Tag, "principal": h.Principal, "state": h.State})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(c.stdout, string(b))
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(c.stdout, "no sessions with handles run on %s\n", eng.Name())
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAG\tPRINCIPAL\tSTATE")
	for _, h := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", h.Tag, termtext.Line(h.Principal), termtext.Line(h.State))
	}
	_ = tw.Flush()
	return nil
}

func (c *cli) endSessions(ctx context.Context, eng sandbox.Engine, tags []string) error {
	var failed error
	for _, tag := range tags {
		if err := sandbox.EndHandleSandbox(ctx, eng, tag); err != nil {
			fmt.Fprintf(c.stderr, "codebridge sessions end %s: %v\n", termtext.Line(tag), err) // and on to the next
			failed = errReported
			continue
		}
		fmt.Fprintf(c.stdout, "ended session %s\n", termtext.Line(tag))
	}
	return failed
}
