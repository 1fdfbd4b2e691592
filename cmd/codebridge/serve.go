package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/codebridge/codebridge/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runServe serves MCP over stdin/stdout until the client closes stdin or a
// SIGINT or SIGTERM arrives; then it removes the container and stops the
// upstreams.
func runServe(c *cli, argv []string) int {
	s, rest, code := c.parse("serve", argv, nil)
	if s == nil {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(c.stderr, "codebridge serve: unexpected argument %q\n", rest[0])
		return 2
	}
	a := newApp(s, c.stderr)
	a.logProblems()
	if s.stateDir != "" {
		a.log.Debug("the state directory setting is accepted for compatibility and not used", "dir", s.stateDir)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Connect to the engine and clear stale containers in the background,
	// so the first call does not wait for it and start-up stays instant.
	go a.engines.warm()

	a.log.Debug("serving", "servers", len(a.specs), "image", s.image)
	err := a.bridge.Server().Run(ctx, bridge.DropCancelledResponses(&mcp.IOTransport{Reader: nopReadCloser{c.stdin}, Writer: nopWriteCloser{c.stdout}}))
	stop()
	a.close()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		a.log.Error("the MCP session ended with an error", "err", err)
		return 1
	}
	return 0
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
