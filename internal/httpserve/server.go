package httpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/internal/httpserve/oauth"
	"github.com/codebridge/codebridge/internal/metrics"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [Options], stated once.
const (
	DefaultIdleTimeout = bridge.DefaultSessionIdle
	DefaultMaxSessions = 32
	DefaultBodyTimeout = 30 * time.Second
	// DefaultUserShare is the part of MaxSessions one user may hold when
	// MaxSessionsPerUser is not set: one DefaultUserShare-th.
	DefaultUserShare = 4
)

// DefaultMaxSessionsPerUser is the sessions one user may have open at
// once when MaxSessionsPerUser is not set: a [DefaultUserShare]-th of
// total, and at least one, so that one user never takes every place of
// a server that has more than one.
func DefaultMaxSessionsPerUser(total int) int { return max(1, total/DefaultUserShare) }

// headerTimeout bounds the time a request's headers may take to arrive,
// and idleConnTimeout the time a kept-alive connection may wait for its
// next request.
const (
	headerTimeout   = 30 * time.Second
	idleConnTimeout = 2 * time.Minute
)

// sessionIDHeader carries the MCP session a request belongs to.
const sessionIDHeader = "Mcp-Session-Id"

// Options configure a [Server].
type Options struct {
	// Addr is the address to listen on, such as 127.0.0.1:8080.
	Addr string
	// Tokens are the accepted bearer tokens; nil, with no OAuth, means no
	// authentication, which only a loopback Addr may have.
	Tokens *Tokens
	// OAuth, when not nil, makes the server an OAuth resource server too:
	// access tokens of its issuers are accepted beside Tokens. An empty
	// Resource is the URL of /mcp at the address listened on.
	OAuth *oauth.Config
	// TLSCert and TLSKey are PEM files; both empty means plain HTTP.
	TLSCert, TLSKey string
	// IdleTimeout ends a session (and removes its sandbox) that sent no
	// request for this long. Zero means [DefaultIdleTimeout]. The bridge's
	// session handles have their own limit ([bridge.Options.SessionIdle]),
	// which serve sets to the same.
	IdleTimeout time.Duration
	// MaxSessions bounds the sessions open at once. Zero means
	// [DefaultMaxSessions].
	MaxSessions int
	// MaxSessionsPerUser bounds the sessions one user (the name of a token
	// in Tokens, or an OAuth principal) has open at once, so that one
	// cannot take every place. Zero means [DefaultMaxSessionsPerUser] of
	// MaxSessions; it does not apply without authentication, where no
	// user can be told from another.
	MaxSessionsPerUser int
	// BodyTimeout bounds the time a request's body may take to arrive;
	// a request whose body is late is answered 408 and its connection
	// closed. Zero means [DefaultBodyTimeout].
	BodyTimeout time.Duration
	// AllowedHosts are host names a request's Host header may carry,
	// besides the loopback names and a specific address listened on. Empty,
	// with a wildcard Addr, accepts any Host.
	AllowedHosts []string
	// AllowedOrigins are the browser origins (https://app.example.com)
	// whose requests are served; a request with any other Origin header is
	// refused. Clients that are not browsers send none.
	AllowedOrigins []string
	// Metrics, when not nil, are served on /metrics.
	Metrics *metrics.Metrics
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
}

// Server is codebridge's HTTP front.
type Server struct {
	b     *bridge.Bridge
	opts  Options
	log   *slog.Logger
	mcp   *mcp.Server
	http  *http.Server
	hosts hostCheck
	limit *sessionLimit
}

// New checks opts and returns a server for b. It refuses a non-loopback
// address without tokens, and half a TLS configuration.
func New(b *bridge.Bridge, opts Options) (*Server, error) {
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerUser == 0 {
		opts.MaxSessionsPerUser = DefaultMaxSessionsPerUser(opts.MaxSessions)
	}
	if opts.BodyTimeout == 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(opts.Addr) // checked by Validate
	s := &Server{b: b, opts: opts, log: opts.Log, mcp: b.Server(), hosts: newHostCheck(host, opts.AllowedHosts)}
	perUser := opts.MaxSessionsPerUser
	if !opts.authenticates() {
		perUser = 0
	}
	s.limit = newSessionLimit(opts.MaxSessions, perUser, s.openSessions, s.openHandles)
	opts.Metrics.Gauge("codebridge_sessions", "MCP sessions open now.", func() float64 { return float64(s.sessions()) })
	s.http = &http.Server{ReadHeaderTimeout: headerTimeout, IdleTimeout: idleConnTimeout,
		ErrorLog: slog.NewLogLogger(opts.Log.Handler(), slog.LevelDebug)}
	return s, nil
}

// authenticates reports whether requests need a token.
func (o Options) authenticates() bool { return o.Tokens != nil || o.OAuth != nil }

// authenticator is the check of bearer tokens, nil without any; with
// OAuth, the resource URL is the given one, else /mcp at addr (the
// address listened on), reached with scheme.
func (s *Server) authenticator(scheme string, addr net.Addr) (*authenticator, error) {
	if !s.opts.authenticates() {
		return nil, nil
	}
	a := &authenticator{tokens: s.opts.Tokens, log: s.log}
	if s.opts.OAuth != nil {
		cfg := *s.opts.OAuth
		if cfg.Resource == "" {
			cfg.Resource = scheme + "://" + addr.String() + "/mcp"
		}
		v, err := oauth.New(cfg, s.log)
		if err != nil {
			return nil, err
		}
		a.oauth, a.metadataURL = v, oauth.MetadataURL(cfg.Resource)
	}
	return a, nil
}

// handler routes /mcp, /healthz, /metrics and, with OAuth, the protected
// resource metadata (at RFC 9728's path for the resource URL, and at the
// root well-known path, which some clients ask first).
func (s *Server) handler(a *authenticator) http.Handler {
	server := func(*http.Request) *mcp.Server { return s.mcp }
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		SessionTimeout: s.opts.IdleTimeout,
		// The Host check below covers loopback too, and allows the names
		// given with AllowedHosts.
		DisableLocalhostProtection: true,
		Logger:                     s.log,
	})
	// The newer protocol, on the same endpoint (stateless.go).
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		DisableLocalhostProtection: true,
		Logger:                     s.log,
	})
	protect := func(h http.Handler) http.Handler {
		if a != nil {
			h = a.require(h)
		}
		return s.checkOrigin(s.checkHost(h))
	}
	mux := http.NewServeMux()
	if a != nil && a.oauth != nil {
		// Public, and read by browser-based clients from other origins:
		// the go-sdk's handler allows any origin to read it.
		meta := s.checkHost(auth.ProtectedResourceMetadataHandler(a.oauth.Metadata()))
		mux.Handle(oauth.MetadataPath(a.oauth.Resource()), meta)
		mux.Handle("/.well-known/oauth-protected-resource", meta)
	}
	mux.Handle("/mcp", protect(s.readBody(s.limitSessions(route(stateless, stateful)))))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", protect(s.opts.Metrics.Handler()))
	}
	return mux
}

// Serve listens and serves until ctx ends; then it closes the bridge
// (which removes every sandbox, so that running cells end, even those
// waiting on an upstream), every MCP session and every connection, at
// once. ready, if not nil, gets the address listened on.
func (s *Server) Serve(ctx context.Context, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.opts.Addr, err)
	}
	scheme := "http"
	if s.opts.TLSCert != "" {
		scheme = "https"
	}
	a, err := s.authenticator(scheme, ln.Addr())
	if err != nil {
		_ = ln.Close()
		return err
	}
	s.http.Handler = s.bodyDeadline(s.handler(a))
	if ready != nil {
		ready(ln.Addr())
	}
	attrs := []any{"url", scheme + "://" + ln.Addr().String() + "/mcp", "auth", s.opts.authenticates(),
		"max_sessions", s.opts.MaxSessions, "max_sessions_per_user", s.limit.perPrincipal, "idle_timeout", s.opts.IdleTimeout}
	if a != nil && a.oauth != nil {
		attrs = append(attrs, "oauth_resource", a.oauth.Resource(), "oauth_metadata", a.metadataURL)
	}
	s.log.Info("serving MCP over HTTP", attrs...)
	errc := make(chan error, 1)
	go func() {
		if scheme == "https" {
			errc <- s.http.ServeTLS(ln, s.opts.TLSCert, s.opts.TLSKey)
		} else {
			errc <- s.http.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	_ = s.b.Close()
	for ss := range s.mcp.Sessions() {
		go ss.Close() // waits for its handlers, which the bridge's Close ended
	}
	_ = s.http.Close()
	<-errc //nolint:errcheck // after Close, Serve returns http.ErrServerClosed: the stop asked for
	return nil
}

// sessions counts the open MCP sessions, and the session handles.
func (s *Server) sessions() int {
	n := len(s.b.ListSessions("", true))
	for range s.openSessions() {
		n++
	}
	return n
}

// openSessions yields the id of each open MCP session, and whether a
// cell of it runs now.
func (s *Server) openSessions() iter.Seq2[string, bool] {
	return func(yield func(string, bool) bool) {
		for ss := range s.mcp.Sessions() {
			if ss.ID() == "" {
				continue // one request's, on the stateless protocol: none of these lasts
			}
			if !yield(ss.ID(), s.b.RunsCell(ss)) {
				return
			}
		}
	}
}

// session is the open MCP session with id, or nil.
func (s *Server) session(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// refuse answers a JSON-RPC request with an error, so that MCP clients
// can show why.
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	_ = json.Unmarshal(bytes.TrimSpace(body), &req)
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32000, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "30")
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// hostCheck decides which Host headers are served.
type hostCheck struct {
	any   bool
	names []string
}

func newHostCheck(bind string, allowed []string) hostCheck {
	names := []string{"localhost", "127.0.0.1", "::1"}
	for _, a := range allowed {
		names = append(names, strings.ToLower(strings.TrimSpace(a)))
	}
	wildcard := bind == "" || bind == "0.0.0.0" || bind == "::"
	if !wildcard {
		names = append(names, strings.ToLower(bind))
	}
	return hostCheck{any: wildcard && len(allowed) == 0, names: names}
}

func (c hostCheck) allows(hostport string) bool {
	if c.any {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	return slices.Contains(c.names, host)
}

// checkHost refuses a Host header the server does not answer to: a page
// whose name was rebound to this address sends its own name.
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allows(r.Host) {
			s.log.Warn("refused a request for another host name (DNS rebinding?)", "host", r.Host, "remote", r.RemoteAddr)
			http.Error(w, fmt.Sprintf("codebridge does not answer to the host name %q: add it with --allowed-hosts if it is this server's", r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkOrigin refuses a browser request from an origin not allowed.
func (s *Server) checkOrigin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !slices.Contains(s.opts.AllowedOrigins, o) {
			s.log.Warn("refused a cross-origin request", "origin", o, "remote", r.RemoteAddr)
			http.Error(w, fmt.Sprintf("codebridge does not serve pages from %s: add the origin with --allowed-origins if it should", strconv.Quote(o)), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isLoopback reports whether a host to listen on is a loopback name or
// address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
