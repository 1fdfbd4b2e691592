package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/procgroup"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyProtocol is the protocol version codebridge asks upstreams for. It
// makes the go-sdk open with `initialize` rather than the newer
// `server/discover` probe, on which some older stdio servers exit.
const legacyProtocol = "2025-11-25"

// Server is one configured upstream MCP server, started on demand.
type Server struct {
	spec   discovery.Server
	opts   Options
	log    *slog.Logger
	stderr *tailBuffer

	mu       sync.Mutex
	conn     *conn
	starting chan struct{} // closed when the start in progress ends
	startErr error
	failures int       // consecutive failed starts
	retryAt  time.Time // no new start before this, after failures
	tools    []*mcp.Tool
	words    []*toolWords // search words of a tool list, built on the first search
	wordsOf  *mcp.Tool    // the first tool of the list words was built for
	stopped  bool
	started  bool // a session was up before: the next one is a restart

	// gen counts the changes to the server's tool list: list_changed
	// notifications and restarts.
	gen atomic.Uint64

	offerList []Entry // resources, templates and prompts, for search (offers.go)
	offerConn *conn   // the session offerList was listed in
	offerGen  int     // counts the lists' changes

	down     *downRef // the pool's: who answers the server's requests to its client
	watchers sync.Map // progress token -> *callWatch, for each tool call in flight
}

// conn is one live session with a server process (or remote endpoint).
type conn struct {
	client *mcp.Client
	cs     *mcp.ClientSession
	proc   *process      // nil for a remote server
	exited chan struct{} // closed when the session ends
}

func (c *conn) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

func newServer(spec discovery.Server, opts Options, down *downRef) *Server {
	if spec.Timeout > 0 {
		opts.CallTimeout = spec.Timeout // the server's own limit wins
	}
	return &Server{
		spec:   spec,
		opts:   opts,
		log:    opts.Log.With("server", spec.Name),
		stderr: newTailBuffer(8 << 10),
		down:   down,
	}
}

// Name is the server's name as configured.
func (s *Server) Name() string { return s.spec.Name }

// Description is the description from the config, or "".
func (s *Server) Description() string { return s.spec.Description }

// Cwd is the directory the server's entry runs it in; empty when unset.
func (s *Server) Cwd() string { return s.spec.Cwd }

// Running reports whether the server has a live session now.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && s.conn.alive()
}

// Start starts the server if it is not running and waits until it is
// ready or ctx ends.
func (s *Server) Start(ctx context.Context) error {
	_, err := s.session(ctx)
	return err
}

// session returns a live session, starting the server when needed. Callers
// that arrive while a start is in progress wait for that start.
func (s *Server) session(ctx context.Context) (*conn, error) {
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
func (s *Server) connect(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ConnectTimeout)
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
		s.startErr = s.explain(context.Background(), "could not start", err) // for every caller waiting: none in particular
		return
	}
	s.failures, s.startErr, s.retryAt = 0, nil, time.Time{}
	s.conn = c
	s.tools = nil
	if s.started {
		s.gen.Add(1) // a restarted server may have other tools
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

func (s *Server) dial(ctx context.Context) (*conn, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "codebridge", Version: s.opts.Version}, s.clientOptions())
	client.AddReceivingMiddleware(s.rootsMiddleware)
	c := &conn{client: client, exited: make(chan struct{})}
	var t mcp.Transport
	if s.spec.URL != "" {
		t = &mcp.StreamableClientTransport{
			Endpoint:   s.spec.URL,
			HTTPClient: &http.Client{Transport: headerTransport{s.spec.Headers, http.DefaultTransport}},
		}
	} else {
		p, pt, err := startProcess(s.spec, s.stderr, s.opts.MaxMessage)
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
	return c, nil
}

// explain returns an [Error] for what failed, with the tail of the
// server's stderr, and logs its host-only detail. ctx is the call that
// failed, when one did: the bridge's client log tells that call's client.
func (s *Server) explain(ctx context.Context, what string, err error) error {
	e := &Error{Server: s.spec.Name, What: what, Err: safeCause(err), cause: err,
		stderr: s.stderr.lastLines(5), source: s.spec.Source}
	if s.spec.URL == "" {
		e.command = strings.Join(append([]string{s.spec.Command}, s.spec.Args...), " ")
	}
	s.log.WarnContext(ctx, "upstream "+what, "err", e)
	return e
}

// ToolsGeneration counts the changes to the server's tool list so far (it
// said its tools changed, or it restarted): whoever cached the tools
// fetches them again when the count moved.
func (s *Server) ToolsGeneration() uint64 { return s.gen.Load() }

// Tools returns the server's tools, starting it when needed. The list is
// cached until the server reports a change or restarts.
func (s *Server) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	c, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.tools != nil && s.conn == c {
		t := s.tools
		s.mu.Unlock()
		return t, nil
	}
	s.mu.Unlock()

	gen := s.gen.Load()
	lctx, cancel := ctxWithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	tools := []*mcp.Tool{}
	for t, err := range c.cs.Tools(lctx, nil) {
		if err != nil {
			return nil, s.callError("listing tools", c, lctx, err)
		}
		tools = append(tools, t)
	}
	s.mu.Lock()
	if s.conn == c && s.gen.Load() == gen { // not a list from before a change
		s.tools = tools
	}
	s.mu.Unlock()
	return tools, nil
}

// Tool returns the tool the server lists under exactly name (case and
// punctuation included), or nil when it lists none. A name missing from
// the cached list is looked for again in a fresh one, so that a tool
// added a moment ago (before its list_changed notification arrived) is
// found.
func (s *Server) Tool(ctx context.Context, name string) (*mcp.Tool, error) {
	for fresh := false; ; fresh = true {
		tools, err := s.Tools(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if t.Name == name {
				return t, nil
			}
		}
		if fresh {
			return nil, nil
		}
		s.mu.Lock()
		if len(s.tools) == len(tools) && (len(tools) == 0 || &s.tools[0] == &tools[0]) {
			s.tools = nil // the list this lookup read: fetch it again
		}
		s.mu.Unlock()
	}
}

// searchIndex returns the tools with their search words, computed once
// per tool list.
func (s *Server) searchIndex(ctx context.Context) ([]*mcp.Tool, []*toolWords, error) {
	tools, err := s.Tools(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.words) != len(tools) || (len(tools) > 0 && s.wordsOf != tools[0]) {
		s.words, s.wordsOf = make([]*toolWords, len(tools)), nil
		if len(tools) > 0 {
			s.wordsOf = tools[0]
		}
		for i, t := range tools {
			s.words[i] = newToolWords(s.spec.Name, t)
		}
	}
	return tools, s.words, nil
}

// Call calls tool with arguments (a JSON object, or empty for none) and
// returns the CallToolResult as JSON. A stdio server's result is passed
// through as it sent it, neither decoded nor encoded again; a remote
// server's is encoded from the go-sdk's decoding. A result with isError set
// is a result, not an error: errors are for calls that did not complete.
func (s *Server) Call(ctx context.Context, tool string, arguments json.RawMessage, progress func(*mcp.ProgressNotificationParams)) (json.RawMessage, error) {
	c, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	if len(arguments) == 0 || string(arguments) == "null" {
		arguments = json.RawMessage("{}")
	}
	cctx, cancel := ctxWithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	cctx, slot := withRawSlot(cctx)
	params := &mcp.CallToolParams{Name: tool, Arguments: arguments}
	call, forget := s.watchCall(ctx, params, progress)
	slot.call = call
	res, err := c.cs.CallTool(cctx, params)
	forget()
	slot.release()
	if err != nil {
		return nil, s.callError(fmt.Sprintf("calling tool %q", tool), c, cctx, err)
	}
	if slot.raw != nil {
		return slot.raw, nil
	}
	return json.Marshal(res)
}

func (s *Server) callError(what string, c *conn, ctx context.Context, err error) error {
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
		return s.explain(ctx, "exited while "+what+" (it will be restarted on the next call)", err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return mark(fmt.Errorf("server %q: %s timed out: %w", s.spec.Name, what, err), ErrTimedOut)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("server %q: %s was cancelled", s.spec.Name, what)
	}
	return mark(fmt.Errorf("server %q: %s: %w", s.spec.Name, what, err), ErrFailed)
}

// Stop ends the server's session and its whole process group. A stopped
// server does not start again.
func (s *Server) Stop() {
	s.mu.Lock()
	s.stopped = true
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		s.close(c)
	}
}

func (s *Server) close(c *conn) {
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
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	tieStream(r, resp)
	return resp, err
}
