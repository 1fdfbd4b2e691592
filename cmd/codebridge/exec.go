package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// execFlags are exec's own flags.
type execFlags struct {
	servers []string // started before the code runs
	outDir  string   // where the files the code shares are copied (--out)
}

func (c *cli) execCommand() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec FILE|-",
		Short: "Run Python through the sandbox, as run_python would, and print its output",
		Long: `Run Python (a file, or - for stdin) through the sandbox, as run_python would,
and print what the model would read, with control characters other than line
feeds and tabs shown escaped (\x1b). The exit code is 1 when the code failed.`,
		Args: exactArgs(1, "give one FILE, or - to read the code from stdin"),
	}
	cmd.Flags().StringSliceVar(&f.servers, "servers", nil, "comma-separated servers to start before the code runs")
	cmd.Flags().StringVar(&f.outDir, "out", "", "copy the files the code shares (runtime.share) into this directory")
	var s appSettings
	flags := slices.Concat(flagsOf[upstreamFlags](), flagsOf[sandboxFlags](), flagsOf[workspaceFlags](), flagsOf[runFlags](),
		flagsOf[stateFlags](), flagsOf[logFlags](), flagsOf[gateFlags]())
	return c.settingsCommand(cmd, &s, flags, commandLogLevel, func(args []string) error {
		plan, err := planRun(s.Workspace, s.Sandbox, s.Upstream, s.State, c.getenv)
		if err != nil {
			return inputError{err}
		}
		return c.exec(&s, plan, args[0], f)
	})
}

// exec runs the Python in file (or stdin, for "-") through the same sandbox
// run_python uses and prints what the model would read: text to stdout,
// images as a note. The code's failure is errReported: its output says it.
func (c *cli) exec(s *appSettings, plan *runPlan, file string, f execFlags) error {
	var src []byte
	var err error
	if file == "-" {
		src, err = io.ReadAll(c.stdin)
	} else {
		src, err = os.ReadFile(file)
	}
	if err != nil {
		return inputError{fmt.Errorf("reading the code: %w", err)}
	}

	a := newApp(s, c.stderr, plan)
	a.logProblems()
	defer a.close()
	if a.gateErr != nil {
		return failure{err: a.gateErr}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var names []string
	for _, n := range f.servers {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	res := a.bridge.RunPython(ctx, string(src), s.Run.Timeout, names)
	// What the code printed, and the names it chose, are the sandbox's:
	// lines stay lines, and every other control character is escaped.
	for _, content := range res.Content {
		switch ct := content.(type) {
		case *mcp.TextContent:
			fmt.Fprint(c.stdout, termtext.Text(ct.Text))
			if !strings.HasSuffix(ct.Text, "\n") {
				fmt.Fprintln(c.stdout)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(c.stdout, "[image: %s, %d bytes]\n", termtext.Line(ct.MIMEType), len(ct.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(c.stdout, "[shared: %s]\n", termtext.Line(ct.URI))
		}
	}
	failed := res.IsError
	if f.outDir != "" && !c.copyShared(ctx, a, res, f.outDir) {
		failed = true
	}
	if failed {
		return errReported
	}
	return nil
}
