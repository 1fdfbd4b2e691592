package main

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/codebridge/codebridge/bridge"
	"github.com/spf13/cobra"
)

func (c *cli) serveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdin/stdout: the one tool run_python (the default command)",
		Long: `Serve MCP over stdin/stdout: the one tool run_python. This is what MCP
clients start; "codebridge" alone does the same.

With --http ADDR it serves streamable HTTP instead, to many clients at
once, each MCP session with a sandbox of its own (see docs/scale-out.md).`,
		Args: cobra.NoArgs,
	}
	names := slices.Concat(upstreamNames, sandboxNames, workspaceNames, runNames, stateNames, logNames, gateNames, httpNames, oauthNames)
	return c.settingsCommand(cmd, names, serveLogLevel, func(s *settings, _ []string) error { return c.serve(s) })
}

// serve serves MCP over stdin/stdout until the client closes stdin or a
// SIGINT or SIGTERM arrives; then it removes the container and stops the
// upstreams.
func (c *cli) serve(s *settings) error {
	if s.httpAddr != "" {
		return c.serveHTTP(s) // each HTTP session's workspace is its own (httpWorkspaces)
	}
	plan, err := s.planRun(c.getenv)
	if err != nil {
		return inputError{err}
	}
	a := newApp(s, c.stderr, plan)
	a.logProblems()
	a.log.Debug("state directory", "dir", s.stateDir)
	if a.gateErr != nil {
		a.log.Error("codebridge cannot start: " + a.gateErr.Error())
		a.close()
		return errReported
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Connect to the engine, clear stale containers and check the image in
	// the background, so that start-up and the handshake never wait for it.
	go func() {
		a.sandboxes.Warm()
		a.warnMissingImage(ctx)
	}()

	// The end of stdin or a signal ends the sandbox at once, even mid-cell:
	// the MCP server waits for its handlers, and a cell stuck in a long
	// upstream call (or in a runtime that stopped) must not keep it up.
	endSandbox := sync.OnceFunc(func() { _ = a.bridge.Close() })
	go func() { <-ctx.Done(); endSandbox() }()
	stdin := eofReader{r: c.stdin, eof: endSandbox}

	a.log.Debug("serving", "servers", len(a.specs), "image", s.image)
	if isTerminal(c.stdin) {
		fmt.Fprint(c.stderr, waitingForClient)
	}
	err = a.bridge.Server().Run(ctx, bridge.DropCancelledResponses(&bridge.StdioTransport{Reader: stdin, Writer: c.stdout}))
	stop()
	a.close()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		a.log.Error("the MCP session ended with an error", "err", err)
		return errReported
	}
	return nil
}

// eofReader calls eof when its reader ends (EOF or an error).
type eofReader struct {
	r   io.Reader
	eof func()
}

func (e eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.eof()
	}
	return n, err
}

// waitingForClient is what a bare codebridge says when a person starts it
// in a terminal: it speaks MCP on stdin and would otherwise wait in silence.
const waitingForClient = `codebridge is an MCP server: it is waiting for an MCP client on stdin (Ctrl-D or Ctrl-C ends it).
Register it with your MCP client instead (README: "Register codebridge with your MCP client"), or try it here:
  codebridge doctor                        check the engine, the image and your servers
  echo 'print(1)' | codebridge exec -      run Python in the sandbox once
`

// isTerminal says whether r is a terminal, where a person, not an MCP
// client, is typing.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
