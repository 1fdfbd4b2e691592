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
	"time"

	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func (c *cli) execCommand() *cobra.Command {
	var servers []string
	var outDir string
	cmd := &cobra.Command{
		Use:   "exec FILE|-",
		Short: "Run Python through the sandbox, as run_python would, and print its output",
		Long: `Run Python (a file, or - for stdin) through the sandbox, as run_python would,
and print what the model would read, with control characters other than line
feeds and tabs shown escaped (\x1b). The exit code is 1 when the code failed.`,
		Args: exactArgs(1, "give one FILE, or - to read the code from stdin"),
	}
	cmd.Flags().StringSliceVar(&servers, "servers", nil, "comma-separated servers to start before the code runs")
	cmd.Flags().StringVar(&outDir, "out", "", "copy the files the code shares (runtime.share) into this directory")
	names := slices.Concat(serverKnobs, sandboxKnobs, workspaceKnobs, runKnobs, []string{"state-dir"}, logKnobs, gateKnobs)
	return c.settingsCommand(cmd, names, commandLogLevel, func(s *settings, args []string) int {
		if err := s.prepareWorkspace(c.getenv); err != nil {
			fmt.Fprintf(c.stderr, "codebridge exec: %v\n", err)
			return 2
		}
		c.outDir = outDir
		return c.exec(s, args[0], servers, s.timeout)
	})
}

// exec runs the Python in file (or stdin, for "-") through the same sandbox
// run_python uses and prints what the model would read: text to stdout,
// images as a note. It returns 1 when the code failed.
func (c *cli) exec(s *settings, file string, servers []string, timeout time.Duration) int {
	var src []byte
	var err error
	if file == "-" {
		src, err = io.ReadAll(c.stdin)
	} else {
		src, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge exec: reading the code: %v\n", err)
		return 2
	}

	s.gate.on = true
	a := newApp(s, c.stderr)
	a.logProblems()
	defer a.close()
	if a.gateErr != nil {
		fmt.Fprintf(c.stderr, "codebridge exec: %v\n", a.gateErr)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var names []string
	for _, n := range servers {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	res := a.bridge.RunPython(ctx, string(src), timeout, names)
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
	if c.outDir != "" && !c.copyShared(ctx, a, res) {
		failed = true
	}
	if failed {
		return 1
	}
	return 0
}
