package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/codebridge/codebridge/internal/httpserve"
	"github.com/codebridge/codebridge/internal/httpserve/oauth"
	"github.com/codebridge/codebridge/internal/metrics"
)

// httpFlags are the settings of serving MCP over HTTP (serve --http).
type httpFlags struct {
	Addr        string        `flag:"http" env:"CODEBRIDGE_HTTP" type:"addr" usage:"serve MCP over streamable HTTP on this address (such as 127.0.0.1:8080) instead of stdio: a sandbox per session" doc:"The endpoint is /mcp; see docs/operator-guide.md, Serving a team over HTTP."`
	TokenFile   string        `flag:"token-file" env:"CODEBRIDGE_TOKEN_FILE" type:"file" usage:"bearer tokens HTTP clients must send, one a line (or: name token); CODEBRIDGE_TOKEN adds one"`
	Token       string        `env:"CODEBRIDGE_TOKEN" usage:"a bearer token HTTP clients may send, besides those of --token-file"`
	TLSCert     string        `flag:"tls-cert" env:"CODEBRIDGE_TLS_CERT" type:"file" usage:"TLS certificate (PEM) for HTTP; with --tls-key"`
	TLSKey      string        `flag:"tls-key" env:"CODEBRIDGE_TLS_KEY" type:"file" usage:"TLS private key (PEM) for HTTP; with --tls-cert"`
	IdleTimeout time.Duration `flag:"idle-timeout" env:"CODEBRIDGE_IDLE_TIMEOUT" default:"{httpserve.DefaultIdleTimeout}" type:"seconds" usage:"end an HTTP session or session handle, and remove its sandbox, after this many seconds without a request"`
	MaxSessions int           `flag:"max-sessions" env:"CODEBRIDGE_MAX_SESSIONS" default:"{httpserve.DefaultMaxSessions}" type:"n" parse:"count" usage:"most HTTP sessions open at once; more are refused" doc:"At the limit a user's new session ends that user's least recently used idle one, else it is refused with a 503 that names this limit."`
	// MaxPerUser has no default of its own: unset (0), httpserve derives
	// it from MaxSessions.
	MaxPerUser     int           `flag:"max-sessions-per-user" env:"CODEBRIDGE_MAX_SESSIONS_PER_USER" derived:"--max-sessions/{httpserve.DefaultUserShare}, at least 1 ({httpserve.DefaultMaxSessionsPerUser} of {httpserve.DefaultMaxSessions})" type:"n" parse:"count" usage:"most HTTP sessions one user (a token's name in --token-file, or an OAuth principal) has open at once; more are refused (default: --max-sessions/{httpserve.DefaultUserShare}, at least 1)" doc:"At the limit a new one ends the user's least recently used idle session, else it is refused with a 503 that names this limit."`
	BodyTimeout    time.Duration `flag:"body-timeout" env:"CODEBRIDGE_BODY_TIMEOUT" default:"{httpserve.DefaultBodyTimeout}" type:"seconds" usage:"time an HTTP request's body may take to arrive; a later one is refused and its connection closed" doc:"The refusal is a 408."`
	Warm           int           `flag:"warm" env:"CODEBRIDGE_WARM" default:"{bridge.DefaultWarm}" type:"n" parse:"sandboxes" usage:"sandboxes kept started for new HTTP sessions (0: none)"`
	AllowedHosts   []string      `flag:"allowed-hosts" env:"CODEBRIDGE_ALLOWED_HOSTS" type:"names" parse:"commas" usage:"comma-separated host names HTTP requests may address, besides loopback and the address listened on"`
	AllowedOrigins []string      `flag:"allowed-origins" env:"CODEBRIDGE_ALLOWED_ORIGINS" type:"origins" parse:"commas" usage:"comma-separated browser origins (https://app.example.com) whose requests are served; others are refused"`
}

// sandboxCount reads a number of sandboxes: 0 or more.
func sandboxCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number of sandboxes (0 or more)", v)
	}
	return n, nil
}

// options are the HTTP server's options these settings make, with the
// tokens read from the token file and the variable, and OAuth's settings.
func (g httpFlags) httpOptions(tokens *httpserve.Tokens, oauth *oauth.Config, m *metrics.Metrics, log *slog.Logger) httpserve.Options {
	return httpserve.Options{
		Addr: g.Addr, Tokens: tokens, OAuth: oauth, TLSCert: g.TLSCert, TLSKey: g.TLSKey,
		IdleTimeout: g.IdleTimeout, MaxSessions: g.MaxSessions, MaxSessionsPerUser: g.MaxPerUser, BodyTimeout: g.BodyTimeout,
		AllowedHosts: g.AllowedHosts, AllowedOrigins: g.AllowedOrigins,
		Metrics: m, Log: log,
	}
}

// serveHTTP serves MCP over streamable HTTP until a SIGINT or SIGTERM
// arrives; then it ends every session, removes every sandbox and stops
// the upstreams, at once, even under running cells.
func (c *cli) serveHTTP(s *settings) error {
	tokens, err := s.HTTP.loadTokens()
	if err != nil {
		return inputError{err}
	}
	if err = s.HTTP.httpOptions(tokens, s.OAuth.config(), nil, nil).Validate(); err != nil {
		return inputError{err}
	}
	// Each session's workspace is its own, and ephemeral; on Kubernetes,
	// its principal's claim.
	workspaceOf, err := s.Workspace.httpWorkspaces(s.Sandbox.Engine, s.Upstream.Roots)
	if err != nil {
		return inputError{err}
	}
	a := newApp(&s.appSettings, c.stderr, &runPlan{user: s.Sandbox.User, workspaceOf: workspaceOf})
	if a.gateErr != nil {
		a.log.Error("codebridge cannot start: " + a.gateErr.Error())
		a.close()
		return errReported
	}
	srv, err := httpserve.New(a.bridge, s.HTTP.httpOptions(tokens, s.OAuth.config(), a.metrics, a.log))
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
func (g httpFlags) loadTokens() (*httpserve.Tokens, error) {
	var tokens *httpserve.Tokens
	if g.TokenFile != "" {
		b, err := os.ReadFile(g.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		if tokens, err = httpserve.ParseTokens(string(b)); err != nil {
			return nil, fmt.Errorf("--token-file %s: %w", g.TokenFile, err)
		}
	}
	return httpserve.Merge(tokens, g.Token)
}
