package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/codebridge/codebridge/httpserve"
)

// serveHTTP serves MCP over streamable HTTP until a SIGINT or SIGTERM
// arrives; then it ends every session, removes every sandbox and stops
// the upstreams, at once, even under running cells.
func (c *cli) serveHTTP(s *settings) int {
	tokens, err := loadTokens(s)
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge serve: %v\n", err)
		return 2
	}
	a := newApp(s, c.stderr)
	if a.gateErr != nil {
		a.log.Error("codebridge cannot start: " + a.gateErr.Error())
		a.close()
		return 1
	}
	srv, err := httpserve.New(a.bridge, httpserve.Options{
		Addr: s.httpAddr, Tokens: tokens, TLSCert: s.tlsCert, TLSKey: s.tlsKey,
		IdleTimeout: s.idleTimeout, MaxSessions: s.maxSessions, MaxSessionsPerUser: s.maxPerUser, BodyTimeout: s.bodyTimeout,
		AllowedHosts: s.allowedHosts, AllowedOrigins: s.allowedOrigins,
		Metrics: a.metrics, Log: a.log,
	})
	if err != nil {
		a.close()
		fmt.Fprintf(c.stderr, "codebridge serve: %v\n", err)
		return 2
	}
	a.logProblems()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		a.sandboxes.Warm()
		a.warnMissingImage(ctx)
	}()
	err = srv.Serve(ctx, nil)
	stop()
	a.close()
	if err != nil {
		a.log.Error("serving HTTP failed", "err", err)
		return 1
	}
	return 0
}

// loadTokens reads the token file and CODEBRIDGE_TOKEN; nil when neither
// is given.
func loadTokens(s *settings) (*httpserve.Tokens, error) {
	var tokens *httpserve.Tokens
	if s.tokenFile != "" {
		b, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %v", err)
		}
		if tokens, err = httpserve.ParseTokens(string(b)); err != nil {
			return nil, fmt.Errorf("--token-file %s: %w", s.tokenFile, err)
		}
	}
	return httpserve.Merge(tokens, s.token)
}

// commaList splits a comma-separated setting, dropping empty items.
func commaList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
