package main

import (
	"log/slog"
	"strconv"
	"time"

	"context"
	"fmt"
	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/metrics"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/codebridge/codebridge/httpserve"
	"github.com/codebridge/codebridge/httpserve/oauth"
)

// httpFlags are the settings of serving MCP over HTTP (serve --http).
type httpFlags struct {
	httpAddr       string
	tokenFile      string
	token          string // CODEBRIDGE_TOKEN
	tlsCert        string
	tlsKey         string
	idleTimeout    time.Duration
	maxSessions    int
	maxPerUser     int
	bodyTimeout    time.Duration
	warm           int
	allowedHosts   []string
	allowedOrigins []string
}

var httpKnobs = []knob[httpFlags]{
	{flag: "http", envs: []string{"CODEBRIDGE_HTTP"}, typ: "addr",
		usage: "serve MCP over streamable HTTP on this address (such as 127.0.0.1:8080) instead of stdio: a sandbox per session",
		set:   func(g *httpFlags, v string) error { g.httpAddr = v; return nil }},
	{flag: "token-file", envs: []string{"CODEBRIDGE_TOKEN_FILE"}, typ: "file",
		usage: "bearer tokens HTTP clients must send, one a line (or: name token); CODEBRIDGE_TOKEN adds one",
		set:   func(g *httpFlags, v string) error { g.tokenFile = v; return nil }},
	{envs: []string{"CODEBRIDGE_TOKEN"}, set: func(g *httpFlags, v string) error { g.token = v; return nil }},
	{flag: "tls-cert", envs: []string{"CODEBRIDGE_TLS_CERT"}, typ: "file", usage: "TLS certificate (PEM) for HTTP; with --tls-key",
		set: func(g *httpFlags, v string) error { g.tlsCert = v; return nil }},
	{flag: "tls-key", envs: []string{"CODEBRIDGE_TLS_KEY"}, typ: "file", usage: "TLS private key (PEM) for HTTP; with --tls-cert",
		set: func(g *httpFlags, v string) error { g.tlsKey = v; return nil }},
	{flag: "idle-timeout", envs: []string{"CODEBRIDGE_IDLE_TIMEOUT"}, def: secondsText(httpserve.DefaultIdleTimeout), typ: "seconds",
		usage: "end an HTTP session, and remove its sandbox, after this many seconds without a request",
		set:   func(g *httpFlags, v string) (err error) { g.idleTimeout, err = seconds(v); return }},
	{flag: "max-sessions", envs: []string{"CODEBRIDGE_MAX_SESSIONS"}, def: strconv.Itoa(httpserve.DefaultMaxSessions), typ: "n",
		usage: "most HTTP sessions open at once; more are refused",
		set:   func(g *httpFlags, v string) (err error) { g.maxSessions, err = positiveCount(v); return }},
	// No default value: unset, httpserve derives it from --max-sessions.
	{flag: "max-sessions-per-user", envs: []string{"CODEBRIDGE_MAX_SESSIONS_PER_USER"}, typ: "n",
		usage: fmt.Sprintf("most HTTP sessions one user (a token's name in --token-file, or an OAuth principal) has open at once; more are refused "+
			"(default: --max-sessions/%d, at least 1)", httpserve.DefaultUserShare),
		set: func(g *httpFlags, v string) (err error) { g.maxPerUser, err = positiveCount(v); return }},
	{flag: "body-timeout", envs: []string{"CODEBRIDGE_BODY_TIMEOUT"}, def: secondsText(httpserve.DefaultBodyTimeout), typ: "seconds",
		usage: "time an HTTP request's body may take to arrive; a later one is refused and its connection closed",
		set:   func(g *httpFlags, v string) (err error) { g.bodyTimeout, err = seconds(v); return }},
	{flag: "warm", envs: []string{"CODEBRIDGE_WARM"}, def: strconv.Itoa(bridge.DefaultWarm), typ: "n",
		usage: "sandboxes kept started for new HTTP sessions (0: none)",
		set: func(g *httpFlags, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%q is not a number of sandboxes (0 or more)", v)
			}
			g.warm = n
			return nil
		}},
	{flag: "allowed-hosts", envs: []string{"CODEBRIDGE_ALLOWED_HOSTS"}, typ: "names",
		usage: "comma-separated host names HTTP requests may address, besides loopback and the address listened on",
		set:   func(g *httpFlags, v string) error { g.allowedHosts = commaList(v); return nil }},
	{flag: "allowed-origins", envs: []string{"CODEBRIDGE_ALLOWED_ORIGINS"}, typ: "origins",
		usage: "comma-separated browser origins (https://app.example.com) whose requests are served; others are refused",
		set:   func(g *httpFlags, v string) error { g.allowedOrigins = commaList(v); return nil }},
}

// options are the HTTP server's options these settings make, with the
// tokens read from the token file and the variable, and OAuth's settings.
func (g httpFlags) httpOptions(tokens *httpserve.Tokens, oauth *oauth.Config, m *metrics.Metrics, log *slog.Logger) httpserve.Options {
	return httpserve.Options{
		Addr: g.httpAddr, Tokens: tokens, OAuth: oauth, TLSCert: g.tlsCert, TLSKey: g.tlsKey,
		IdleTimeout: g.idleTimeout, MaxSessions: g.maxSessions, MaxSessionsPerUser: g.maxPerUser, BodyTimeout: g.bodyTimeout,
		AllowedHosts: g.allowedHosts, AllowedOrigins: g.allowedOrigins,
		Metrics: m, Log: log,
	}
}

// serveHTTP serves MCP over streamable HTTP until a SIGINT or SIGTERM
// arrives; then it ends every session, removes every sandbox and stops
// the upstreams, at once, even under running cells.
func (c *cli) serveHTTP(s *settings) error {
	tokens, err := loadTokens(s)
	if err != nil {
		return inputError{err}
	}
	if err := s.httpOptions(tokens, s.oauth.config(), nil, nil).Validate(); err != nil {
		return inputError{err}
	}
	// Each session's workspace is its own, and ephemeral; on Kubernetes,
	// its principal's claim.
	workspaceOf, err := s.httpWorkspaces()
	if err != nil {
		return inputError{err}
	}
	a := newApp(s, c.stderr, &runPlan{user: s.user, workspaceOf: workspaceOf})
	if a.gateErr != nil {
		a.log.Error("codebridge cannot start: " + a.gateErr.Error())
		a.close()
		return errReported
	}
	srv, err := httpserve.New(a.bridge, s.httpOptions(tokens, s.oauth.config(), a.metrics, a.log))
	if err != nil {
		a.close()
		return inputError{err}
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
		return errReported
	}
	return nil
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
