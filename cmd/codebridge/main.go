// Command codebridge is a stdio MCP server that gives an agent one tool,
// run_python, whose code runs in a persistent, hardened container where
// every configured upstream MCP server is a set of Python functions.
//
// Usage:
//
//	codebridge [serve] [flags]   serve MCP over stdin/stdout (the default)
//	codebridge version           print the version
//
// Upstream servers are read from ~/MCPs/*.json (and --config files) in the
// mcpServers format. Logs go to stderr; stdout carries only MCP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		cmd, argv = argv[0], argv[1:]
	}
	switch cmd {
	case "serve":
		return serve(argv, stdin, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "codebridge", version())
		return 0
	case "help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "codebridge: unknown command %q\n\n", cmd)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `codebridge: one run_python tool for all your MCP servers

Usage:
  codebridge [serve] [flags]   serve MCP over stdin/stdout (default)
  codebridge version           print the version

Run "codebridge serve -h" for the flags.
`)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func serve(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := loadSettings(argv, os.Getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "codebridge:", err)
		return 2
	}
	log := newLogger(stderr, cfg.logLevel)
	slog.SetDefault(log)

	self, _ := os.Executable()
	specs, problems := discovery.Load(discovery.Options{Files: cfg.configs, Self: self})
	for _, p := range problems {
		log.Warn(p.Error())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	engines := newEngineProvider(cfg.engine, log)
	go engines.warm() // connect and clear stale containers before the first call needs it

	servers := make([]sandbox.ServerInfo, len(specs))
	for i, s := range specs {
		servers[i] = sandbox.ServerInfo{Name: s.Name, Description: s.Description}
	}
	sess := sandbox.NewSession(sandbox.Config{
		Engine:  engines.get,
		Image:   cfg.image,
		Limits:  cfg.limits,
		Servers: servers,
		Log:     log,
	})
	pool := upstream.NewPool(specs, upstream.Options{Version: version(), Log: log})
	b := bridge.New(sess, pool, bridge.Options{
		DefaultTimeout: cfg.timeout,
		MaxTimeout:     cfg.maxTimeout,
		Version:        version(),
		Log:            log,
	})

	log.Debug("serving", "servers", len(specs), "image", cfg.image)
	err = b.Server().Run(ctx, &mcp.IOTransport{Reader: nopCloser{stdin}, Writer: nopWriteCloser{stdout}})
	stop()

	// Shut down within a few seconds whatever happens: a second signal
	// or a stuck engine must not keep the process alive.
	done := make(chan struct{})
	go func() {
		defer close(done)
		shutdown(sess, pool, engines)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		log.Error("shutdown took longer than 10s; exiting anyway")
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		log.Error("MCP session ended", "err", err)
		return 1
	}
	return 0
}

func shutdown(sess *sandbox.Session, pool *upstream.Pool, engines *engineProvider) {
	c := make(chan struct{}, 2)
	go func() { _ = sess.Close(); c <- struct{}{} }()
	go func() { _ = pool.Close(); c <- struct{}{} }()
	<-c
	<-c
	engines.close()
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
