package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/spf13/cobra"
)

// workspaceCommand lists and removes the workspace volumes, and says which
// one the working directory's project uses.
func (c *cli) workspaceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workspace [list|here|rm NAME...]",
		Short: "List or remove the sandbox workspaces kept on the engine (one volume per project)",
		Long: `List or remove the sandbox workspaces kept on the engine. By default every
project (the directory a client starts codebridge in, or the first --root) has
a volume of its own, named codebridge-ws-<directory>-<digest>; the bridges of
one project share it, and another project's never see its files.

  codebridge workspace        list the volumes, their project and how many sandboxes use each now
  codebridge workspace here   the volume of the current directory's project
  codebridge workspace rm NAME...
                              remove volumes and their files (refused while a sandbox uses one)

A host-directory workspace (--workspace ~/dir) is a directory: remove it as one.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 || len(args) == 1 && (args[0] == "list" || args[0] == "here"):
				return nil
			case len(args) >= 2 && args[0] == "rm":
				return nil
			}
			return usageError{"give list, here, or rm NAME..."}
		},
	}
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var s struct {
		Sandbox  sandboxFlags
		Upstream upstreamFlags
		Log      logFlags
	}
	flags := slices.Concat([]string{"engine", "namespace", "root"}, flagsOf[logFlags]())
	return c.settingsCommand(cmd, &s, flags, commandLogLevel, func(args []string) error {
		if len(args) == 1 && args[0] == "here" {
			return c.workspaceHere(s.Upstream.Roots, asJSON)
		}
		return c.withEngine(s.Sandbox, s.Log, func(ctx context.Context, eng sandbox.Engine) error {
			if len(args) > 0 && args[0] == "rm" {
				return c.removeWorkspaces(ctx, eng, args[1:])
			}
			return c.listWorkspaces(ctx, eng, asJSON)
		})
	})
}

// withEngine runs fn with the engine the sandbox settings name, for a
// command that lists or removes what codebridge keeps there (it makes no
// claim, and starts no sandbox).
func (c *cli) withEngine(s sandboxFlags, log logFlags, fn func(ctx context.Context, eng sandbox.Engine) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := sandbox.NewManager(s.engineOptions(newLogger(c.stderr, log), false))
	defer m.Close()
	eng, err := m.Engine(ctx)
	if err != nil {
		return failure{err: err}
	}
	return fn(ctx, eng)
}

func (c *cli) workspaceHere(roots []string, asJSON bool) error {
	m, err := projectMount(principal.Local(), roots)
	if err != nil {
		return failure{where: "here", err: err}
	}
	if asJSON {
		b, _ := json.MarshalIndent(map[string]string{"name": m.Source, "project": m.Labels[sandbox.LabelProject]}, "", "  ")
		fmt.Fprintln(c.stdout, string(b))
		return nil
	}
	fmt.Fprintf(c.stdout, "%s\t(the project %s)\n", m.Source, termtext.Line(m.Labels[sandbox.LabelProject]))
	return nil
}

func (c *cli) listWorkspaces(ctx context.Context, eng sandbox.Engine, asJSON bool) error {
	list, err := eng.Workspaces(ctx)
	if err != nil {
		return failure{err: err}
	}
	if asJSON {
		out := []map[string]any{}
		for _, w := range list {
			out = append(out, map[string]any{"name": w.Name, "project": w.Project, "principal": w.Principal, "created": w.Created, "in_use": w.InUse})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(c.stdout, string(b))
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(c.stdout, "no workspace volumes on %s yet: a bridge makes its project's on its first run_python\n", eng.Name())
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tIN USE\tPROJECT\tPRINCIPAL")
	for _, w := range list {
		project := termtext.Line(w.Project)
		switch {
		case w.Project == "" && w.Principal != "":
			project = "(not kept: a Kubernetes claim names no project)"
		case w.Project == "":
			project = "(named with --workspace)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", termtext.Line(w.Name), w.InUse, project, termtext.Line(w.Principal))
	}
	_ = tw.Flush()
	return nil
}

func (c *cli) removeWorkspaces(ctx context.Context, eng sandbox.Engine, names []string) error {
	var failed error
	for _, n := range names {
		if err := eng.RemoveWorkspace(ctx, n); err != nil {
			fmt.Fprintf(c.stderr, "codebridge workspace rm: %v\n", err) // and on to the next
			failed = errReported
			continue
		}
		fmt.Fprintf(c.stdout, "removed workspace %s\n", termtext.Line(n))
	}
	return failed
}
