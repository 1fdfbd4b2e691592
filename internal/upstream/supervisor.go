package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/procgroup"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyProtocol is the protocol version codebridge asks upstreams for. It
// makes the go-sdk open with `initialize` rather than the newer
// `server/discover` probe, on which some older stdio servers exit.
const legacyProtocol = "2025-11-25"

// conn is one live session with a server process (or remote endpoint).
type conn struct {
	client *mcp.Client
	cs     *mcp.ClientSession
	proc   *process      // nil for a remote server
	line   *lineConn     // a stdio server's connection, for tools/call requests the bridge sends itself; nil: none
	exited chan struct{} // closed when the session ends
}

// alive reports whether the session has not ended yet.
func (c *conn) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// supervisor keeps one server's session: it starts the process (or
// connects to the remote endpoint) on first use, starts it again on the
// next use after it exited, backs off after failed starts, and stops it
// with its whole process group. It also runs each request on the session
// under the call time limit and turns a failure into an error that says
// whether the server went away.
type supervisor struct {
	spec           discovery.Server
	connectTimeout time.Duration
	callTimeout    time.Duration
	maxMessage     int
	log            *slog.Logger
	stderr         *tailBuffer
	newClient      func() *mcp.Client // the MCP client of a new session
	restarted      func()             // told when a session follows an earlier one
	calls          *callWatchers      // the tool calls in flight, which the transports find by their requests

	mu       sync.Mutex
	conn     *conn
	starting chan struct{} // closed when the start in progress ends
	startErr error
	failures int       // consecutive failed starts
	retryAt  time.Time // no new start before this, after failures
	stopped  bool
	started  bool // a session was up before: the next one is a restart
}

// running reports whether the server has a live session now.
func (s *supervisor) running() bool { return s.live() != nil }

// live returns the live session, or nil when there is none.
func (s *supervisor) live() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.alive() {
		return s.conn
	}
	return nil
}

// session returns a live session, starting the server when needed. Callers
// that arrive while a start is in progress wait for that start.
func (s *supervisor) session(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, fmt.Errorf("server %q: the bridge is shutting down", s.spec.Name)
	}
	if s.conn != nil && s.conn.alive() {
		c := s.conn
		s.mu.Unlock()
		return c, nil
	}
	if s.starting == nil {
		if wait := time.Until(s.retryAt); wait > 0 {
			err := fmt.Errorf("%w (it failed to start %d times in a row; next try in %s)", s.startErr, s.failures, wait.Round(100*time.Millisecond))
			s.mu.Unlock()
			return nil, err
		}
		s.starting = make(chan struct{})
		// The start runs under its own time limit, not the caller's
		// context: other callers may be waiting for it too.
		go s.connect(s.starting)
	}
	ch := s.starting
	s.mu.Unlock()

	select {
	case <-ch:
	case <-ctx.Done():
		return nil, fmt.Errorf("server %q: waiting for it to start: %w", s.spec.Name, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil, s.startErr
	}
	return s.conn, nil
}

// connect starts the server and records the outcome; it closes done.
func (s *supervisor) connect(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), s.connectTimeout)
	defer cancel()
	start := time.Now()
	c, err := s.dial(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	s.starting = nil
	if err == nil && s.stopped {
		go s.close(c)
		err = errors.New("the bridge is shutting down")
	}
	if err != nil {
		s.failures++
		backoff := min(time.Duration(1<<min(s.failures-1, 6))*500*time.Millisecond, 30*time.Second)
		s.retryAt = time.Now().Add(backoff)
		s.startErr = s.explain(nil, "could not start", err) // for every caller waiting: none in particular
		return
	}
	s.failures, s.startErr, s.retryAt = 0, nil, time.Time{}
	s.conn = c
	if s.started {
		s.restarted() // a restarted server may have other tools
	}
	s.started = true
	s.log.Info("upstream started", "took", time.Since(start).Round(time.Millisecond))
	go func() {
		_ = c.cs.Wait()
		close(c.exited)
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if !stopped {
			s.log.Warn("upstream exited; it will be started again on its next use", "stderr", s.stderr.lastLines(3))
		}
	}()
}

// dial starts the server's process, or connects to its endpoint, and
// opens an MCP session with it.
func (s *supervisor) dial(ctx context.Context) (*conn, error) {
	client := s.newClient()
	c := &conn{client: client, exited: make(chan struct{})}
	var t mcp.Transport
	if s.spec.URL != "" {
		t = &mcp.StreamableClientTransport{
			Endpoint:   s.spec.URL,
			HTTPClient: &http.Client{Transport: headerTransport{s.spec.Headers, http.DefaultTransport, s.calls}},
		}
	} else {
		p, pt, err := startProcess(s.spec, s.stderr, s.maxMessage, s.calls)
		if err != nil {
			return nil, err
		}
		c.proc, t = p, pt
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		if c.proc != nil {
			procgroup.Kill(c.proc.cmd)
			<-c.proc.exited
		}
		return nil, err
	}
	c.cs = cs
	if lt, ok := t.(*lineTransport); ok && legacySession(cs) {
		c.line = lt.conn
	}
	return c, nil
}

// legacySession reports whether cs speaks a protocol older than
// 2026-07-28, as the bridge asks: there a tools/call is one request and
// one response (no multi-round-trip retries, no per-request _meta), so
// the bridge may send it itself ([lineConn.request]).
func legacySession(cs *mcp.ClientSession) bool {
	res := cs.InitializeResult()
	return res != nil && res.ProtocolVersion < "2026-07-28"
}

// run runs one request on a live session, starting the server when
// needed, under the call time limit; what names the request in the error
// that a failure of do becomes, and caller (nil: no one) is who the
// request is made for (see failed).
func (s *supervisor) run(ctx context.Context, caller Caller, what string, do func(context.Context, *conn) error) error {
	c, err := s.session(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := ctxWithTimeout(ctx, s.callTimeout)
	defer cancel()
	if err := do(rctx, c); err != nil {
		return s.failed(what, c, rctx, caller, err)
	}
	return nil
}

// explain returns an [Error] for what failed, with the tail of the
// server's stderr, and logs its host-only detail. caller is who the
// request that failed was made for, when one was: the log record names
// it (see [CallerKey]), and the bridge's client log tells that caller's
// client.
func (s *supervisor) explain(caller Caller, what string, err error) error {
	e := &Error{Server: s.spec.Name, What: what, Err: safeCause(err), cause: err,
		stderr: s.stderr.lastLines(5), source: s.spec.Source}
	if s.spec.URL == "" {
		e.command = strings.Join(append([]string{s.spec.Command}, s.spec.Args...), " ")
	}
	s.log.Warn("upstream "+what, append([]any{"err", e}, callerAttrs(caller)...)...)
	return e
}

// failed is the error for a request on session c, made for caller, that
// did not complete: the server exited (explained, with its stderr), the
// request timed out or was cancelled under ctx, or the server failed it.
func (s *supervisor) failed(what string, c *conn, ctx context.Context, caller Caller, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, errReading) {
		// The server went away; wait for its exit so that its last stderr
		// lines are in the buffer before they are quoted.
		select {
		case <-c.exited:
		case <-time.After(3 * time.Second):
		}
	}
	switch {
	case !c.alive() || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, errReading):
		return s.explain(caller, "exited while "+what+" (it will be restarted on the next call)", err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return mark(fmt.Errorf("server %q: %s timed out: %w", s.spec.Name, what, err), ErrTimedOut)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("server %q: %s was cancelled", s.spec.Name, what)
	}
	return mark(fmt.Errorf("server %q: %s: %w", s.spec.Name, what, err), ErrFailed)
}

// stop ends the session and its whole process group. A stopped server
// does not start again.
func (s *supervisor) stop() {
	s.mu.Lock()
	s.stopped = true
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		s.close(c)
	}
}

// close ends session c: its stdin is closed, then its process group is
// stopped.
func (s *supervisor) close(c *conn) {
	_ = c.cs.Close() // closes the server's stdin
	if c.proc != nil {
		c.proc.stop(2 * time.Second)
	}
}

// headerTransport adds configured headers to each request of a remote
// upstream, and ties the log messages of a tool call's response stream to
// the call (logtie.go).
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
	calls   *callWatchers // the server's tool calls in flight
}

// RoundTrip sends r with the configured headers and wraps an event-stream
// response so that its log messages are tied to r's tool call.
func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	tieStream(h.calls, r, resp)
	return resp, err
}
