package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/pyruntime"
)

// ServerInfo describes one configured upstream server to the runtime.
type ServerInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// RPCHandler answers the requests the runtime sends while a cell runs
// (list_tools, call_tool, ...; see pyruntime/PROTOCOL.md). HandleRPC is
// called on its own goroutine per request; ctx is cancelled when the cell
// ends or its call is cancelled. The value must be valid JSON.
type RPCHandler interface {
	HandleRPC(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Config configures a [Session].
type Config struct {
	// Engine returns the container engine; it is called on first use and
	// again after a failure. It must be safe for concurrent use.
	Engine func(context.Context) (Engine, error)
	// Image is the sandbox image. Empty means [DefaultImage].
	Image string
	// User is the uid:gid the code runs as. Empty means 65534:65534.
	User string
	// Limits bound the container's resources.
	Limits Limits
	// Servers are announced to the runtime, which makes them Python objects.
	Servers []ServerInfo
	// StartTimeout bounds creating the container and loading the runtime.
	// Zero means 60 seconds.
	StartTimeout time.Duration
	// Grace is how long interrupted code gets to stop before the container
	// is replaced. Zero means 2 seconds.
	Grace time.Duration
	// OutputLimit is how many characters of each stream a result keeps
	// (head and tail). The runtime saves a stream that prints more to a
	// file in the workspace, which the cut output names. Zero means 20,000.
	OutputLimit int
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
}

// Status is how a cell ended.
type Status string

// The statuses a [Result] can have.
const (
	StatusOK        Status = "ok"
	StatusError     Status = "error"     // the code raised
	StatusTimeout   Status = "timeout"   // the time limit interrupted it
	StatusCancelled Status = "cancelled" // the caller cancelled it
	StatusCrashed   Status = "crashed"   // the container died under it
)

// Image is a picture a cell showed.
type Image struct {
	MIME string
	Data string // base64
}

// Result is the outcome of one cell.
type Result struct {
	Status Status
	Stdout Output
	Stderr Output
	// Value is the repr of the cell's final expression; HasValue is false
	// when there was none or it was None.
	Value    string
	HasValue bool
	// JSON is the final value as JSON, when the request asked for it and
	// the value is JSON data (dicts, lists, strings, numbers, booleans and
	// None, up to about 1 MiB); otherwise nil.
	JSON json.RawMessage
	// Traceback is the error the code raised, showing the user's frames.
	Traceback string
	Images    []Image
	// StateKept is false when the container was replaced, so variables,
	// imports and files from earlier cells are gone.
	StateKept bool
	// Notice explains a restart or a crash, for the agent.
	Notice   string
	Duration time.Duration
}

// Request is one cell to run.
type Request struct {
	Code    string
	Timeout time.Duration
	Handler RPCHandler
	// JSON asks for the final value as JSON too (Result.JSON).
	JSON bool
	// Stale, when set, is called as the cell is sent, after the cells
	// before it ended. It names the upstream servers whose tools changed
	// since it was last called; the runtime drops its cached tool lists
	// for them before the code runs.
	Stale func() []string
	// OnOutput, when set, is called with each piece of the cell's output
	// as it arrives (stream is "stdout" or "stderr"), on the goroutine
	// that collects the cell's frames: it must return quickly.
	OnOutput func(stream, text string)
}

// Session is the one persistent sandbox of a bridge. Cells run one at a
// time, in the order they arrive; Run is safe for concurrent use.
type Session struct {
	cfg  Config
	log  *slog.Logger
	turn chan struct{} // holds a token while a cell runs

	mu     sync.Mutex // guards cur and closed
	cur    *live
	closed bool
	nextID int64
}

// live is one running container with its runtime loaded.
type live struct {
	ctr     Container
	w       *frameWriter
	frames  chan *frame
	quit    chan struct{}
	readErr error // valid once frames is closed
	python  string
}

// NewSession returns a session; no container starts until the first Run.
func NewSession(cfg Config) *Session {
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.Grace == 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.OutputLimit == 0 {
		cfg.OutputLimit = 20000
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Session{cfg: cfg, log: cfg.Log, turn: make(chan struct{}, 1)}
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("sandbox: the session is closed (the bridge is shutting down)")

// Run runs one cell and returns its result. An error means the cell did not
// run at all (no engine, no image, the session closed); everything that
// happens to running code is a Result.
func (s *Session) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Timeout <= 0 {
		return nil, errors.New("sandbox: a cell needs a positive timeout")
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.turn }()

	start := time.Now()
	c, err := s.container(ctx)
	if err != nil {
		return nil, err
	}
	res := s.run(ctx, c, req)
	res.Duration = time.Since(start)
	return res, nil
}

// container returns the live container, starting one when there is none.
func (s *Session) container(ctx context.Context) (*live, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	c := s.cur
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		go s.discard(c)
		return nil, ErrClosed
	}
	s.cur = c
	return c, nil
}

// start creates a container, loads the runtime into it through stdin, and
// waits for the runtime to say it is ready.
func (s *Session) start(ctx context.Context) (*live, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	eng, err := s.cfg.Engine(ctx)
	if err != nil {
		return nil, err
	}
	ctr, err := eng.Start(ctx, ContainerSpec{
		Image: s.cfg.Image,
		Cmd:   []string{"python3", "-I", "-u", "-c", pyruntime.Loader()},
		Env: []string{
			// PATH too: an imported image may carry no environment at all.
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOME=/workspace", "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8",
			"PYTHONDONTWRITEBYTECODE=1", "MPLBACKEND=Agg",
		},
		Limits: s.cfg.Limits,
		User:   s.cfg.User,
	})
	if err != nil {
		return nil, err
	}
	c := &live{ctr: ctr, w: newFrameWriter(ctr.Stdin()), frames: make(chan *frame, 64), quit: make(chan struct{})}
	go c.read(s.log)

	fail := func(what string, err error) (*live, error) {
		reason := ctr.Exited(context.WithoutCancel(ctx), time.Second)
		s.discard(c)
		return nil, fmt.Errorf("sandbox: %s: %v; the container: %s. Check that image %s has python3 (3.8 or newer)", what, err, reason, s.cfg.Image)
	}
	archive := pyruntime.Archive()
	if err := c.w.writeRaw([]byte(fmt.Sprintf("%16d", len(archive))), archive); err != nil {
		return fail("loading the runtime", err)
	}
	servers := s.cfg.Servers
	if servers == nil {
		servers = []ServerInfo{}
	}
	if err := c.w.send(map[string]any{"t": frameHello, "servers": servers}); err != nil {
		return fail("greeting the runtime", err)
	}
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return fail("the runtime stopped before it was ready", c.readErr)
			}
			if f.T == frameReady {
				c.python = f.Python
				s.log.Debug("sandbox ready", "container", short(ctr.ID()), "python", f.Python)
				return c, nil
			}
		case <-ctx.Done():
			return fail("waiting for the runtime", ctx.Err())
		}
	}
}

// read forwards the runtime's frames to c.frames until the stream ends.
func (c *live) read(log *slog.Logger) {
	defer close(c.frames)
	fr := newFrameReader(c.ctr.Stdout())
	for {
		f, err := fr.next()
		if err != nil {
			c.readErr = err
			return
		}
		if f.T == frameLog {
			log.Info("sandbox runtime: "+f.Msg, "level", f.Level)
			continue
		}
		select {
		case c.frames <- f:
		case <-c.quit:
			c.readErr = errChannelClosed
			return
		}
	}
}

// run sends one cell to c and collects its frames until it is done.
func (s *Session) run(ctx context.Context, c *live, req Request) *Result {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()

	cellCtx, cancelCell := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCell() // cancels the cell's in-flight RPCs

	res := &Result{StateKept: true}
	stdout, stderr := newClipBuffer(s.cfg.OutputLimit), newClipBuffer(s.cfg.OutputLimit)
	var spill map[string]*Spill // from the done frame
	finish := func() *Result {
		res.Stdout, res.Stderr = stdout.output(spill["stdout"]), stderr.output(spill["stderr"])
		return res
	}
	lost := func(status Status, notice string) *Result {
		s.replace(c)
		res.Status, res.StateKept = status, false
		res.Notice = notice + "; the sandbox was restarted, so variables, imports and files from earlier calls are gone"
		return finish()
	}

	exec := map[string]any{"t": frameExec, "id": id, "code": req.Code, "limit": s.cfg.OutputLimit}
	if req.JSON {
		exec["json"] = true
	}
	if req.Stale != nil {
		if stale := req.Stale(); len(stale) > 0 {
			exec["stale"] = stale
		}
	}
	if err := c.w.send(exec); err != nil {
		return lost(StatusCrashed, "the sandbox could not take the code ("+c.ctr.Exited(cellCtx, time.Second)+")")
	}

	timer := time.NewTimer(req.Timeout)
	defer timer.Stop()
	done := ctx.Done()
	var grace <-chan time.Time
	var stopping Status // why we interrupted, once we have
	interrupt := func(why Status) {
		if stopping != "" {
			return
		}
		stopping = why
		if err := c.w.send(map[string]any{"t": frameInterrupt, "id": id}); err != nil {
			s.log.Warn("sending interrupt", "err", err)
		}
		grace = time.After(s.cfg.Grace)
	}

	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				if stopping != "" {
					return lost(stopping, "the code was stopped and the sandbox ended: "+c.ended(cellCtx))
				}
				return lost(StatusCrashed, "the sandbox died while the code ran: "+c.ended(cellCtx))
			}
			switch f.T {
			case frameOut:
				if f.ID != id {
					continue // late output of an earlier cell's thread
				}
				if f.Stream == "stderr" {
					stderr.WriteString(f.Data)
				} else {
					stdout.WriteString(f.Data)
				}
				if req.OnOutput != nil {
					req.OnOutput(f.Stream, f.Data)
				}
			case frameImage:
				if f.ID == id {
					keepImage(res, f, stderr)
				}
			case frameRPC:
				go s.answer(cellCtx, c, f, req.Handler)
			case frameDone:
				if f.ID != id {
					continue
				}
				if f.Value != nil {
					res.Value, res.HasValue = *f.Value, true
				}
				if f.Error != nil {
					res.Traceback = *f.Error
				}
				if req.JSON && len(f.JSON) > 0 && res.HasValue {
					res.JSON = f.JSON
				}
				spill = f.Spill
				switch {
				case stopping != "":
					res.Status = stopping
				case f.Status == "ok":
					res.Status = StatusOK
				default:
					res.Status = StatusError
				}
				return finish()
			default:
				s.log.Debug("ignoring a frame", "type", f.T)
			}
		case <-timer.C:
			interrupt(StatusTimeout)
		case <-done:
			done = nil
			interrupt(StatusCancelled)
		case <-grace:
			return lost(stopping, fmt.Sprintf("the code did not stop within %s of being interrupted", s.cfg.Grace))
		}
	}
}

// Bounds on the images one result keeps: the frames come from untrusted code.
const (
	maxImages     = 16
	maxImageBytes = 32 << 20 // base64, all images together
)

// keepImage adds the image in f to res, or notes on stderr why it was left
// out.
func keepImage(res *Result, f *frame, stderr *clipBuffer) {
	total := len(f.Data)
	for _, im := range res.Images {
		total += len(im.Data)
	}
	if len(res.Images) >= maxImages || total > maxImageBytes {
		stderr.WriteString(fmt.Sprintf("[codebridge: an image of %s was left out: a result keeps at most %d images, %s in all]\n",
			sizeText(int64(len(f.Data))), maxImages, sizeText(maxImageBytes)))
		return
	}
	res.Images = append(res.Images, Image{MIME: f.Mime, Data: f.Data})
}

// ended says why c's container stopped, waiting a little for the engine
// to know.
func (c *live) ended(ctx context.Context) string {
	if broke := c.protocolError(); broke != "" {
		return "its frame channel broke: " + broke + "; code that writes to descriptors it did not open can do this"
	}
	return c.ctr.Exited(ctx, 2*time.Second)
}

// protocolError describes how the runtime broke the frame protocol, or is
// "" when its stream simply ended. Valid once c.frames is closed.
func (c *live) protocolError() string {
	var pe *ProtocolError
	if errors.As(c.readErr, &pe) {
		return strings.TrimPrefix(pe.Error(), "sandbox: ")
	}
	return ""
}

// answer handles one RPC from the runtime and sends the result back.
func (s *Session) answer(ctx context.Context, c *live, f *frame, h RPCHandler) {
	if h == nil {
		_ = c.w.sendResult(f.ID, nil, "BridgeError", "this bridge answers no requests from the sandbox")
		return
	}
	val, err := h.HandleRPC(ctx, f.Method, f.Params)
	if err != nil {
		msg := err.Error()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			msg = "the call was cancelled because the run_python call ended"
		}
		err = c.w.sendResult(f.ID, nil, "BridgeError", msg)
	} else {
		err = c.w.sendResult(f.ID, val, "", "")
	}
	if err != nil && ctx.Err() == nil {
		s.log.Debug("answering an RPC", "method", f.Method, "err", err)
	}
}

// replace drops c as the current container and removes it; the next Run
// starts a fresh one.
func (s *Session) replace(c *live) {
	s.mu.Lock()
	if s.cur == c {
		s.cur = nil
	}
	s.mu.Unlock()
	s.discard(c)
}

func (s *Session) discard(c *live) {
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.ctr.Remove(ctx); err != nil {
		s.log.Warn("removing the sandbox container", "err", err)
	}
}

// Python reports the sandbox's Python version, or "" before the first Run.
func (s *Session) Python() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return ""
	}
	return s.cur.python
}

// Close removes the container. A cell still running ends as crashed.
// Close is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	c := s.cur
	s.cur = nil
	s.closed = true
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	s.discard(c)
	return nil
}
