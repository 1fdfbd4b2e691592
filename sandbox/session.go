package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// Host is what a session needs from the program that runs it (the bridge),
// for every cell alike. Each session has one; what one cell asks goes to
// the [Caller] of its [Request].
type Host interface {
	// Servers are announced to a new runtime, which makes them Python
	// objects.
	Servers() []protocol.ServerInfo
	// StartFiles are written into every new sandbox before its first cell
	// (skills, packages): a new container starts with them.
	StartFiles() []protocol.File
	// Stale is called as a cell is sent, after the cells before it ended.
	// It names the upstream servers whose tools changed since it was last
	// called; the runtime drops its cached tool lists for them.
	Stale() []string
}

// Caller is the call one cell serves, as the host sees it: it answers the
// requests the cell's runtime sends and sees its output. The program that
// runs the cell makes it, with whatever it needs to know of the call (who
// made it, what watches it), and passes it in the [Request]: nothing about
// the call rides in a context.
type Caller interface {
	// Answer handles one request the runtime sent while the cell ran
	// (list_tools, call_tool, ...; see pyruntime/PROTOCOL.md), on a
	// goroutine of its own; ctx ends with the cell. The value must be
	// valid JSON.
	Answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error)
	// Output sees each piece of the cell's output as it arrives (stream is
	// "stdout" or "stderr"), on the goroutine that collects the cell's
	// frames: it must return quickly.
	Output(stream, text string)
}

// TakeBackSeer is a [Caller] that learns, before its cell's requests,
// that the cell's Run took the session back from another bridge and
// where the runtime was (the ledger of the cell that ran there among it).
type TakeBackSeer interface {
	TookBack(r *Resumed)
}

// tookBack tells the cell's caller that its Run took the session back.
func tookBack(c Caller, r *Resumed) {
	if s, ok := c.(TakeBackSeer); ok {
		s.TookBack(r)
	}
}

// RemoveTimeout bounds removing one container. Removing is quick on most
// engines; rootless Podman on vfs storage, removing twenty at once at
// shutdown, needs tens of seconds.
const RemoveTimeout = 60 * time.Second

// Defaults of a [Config], stated once.
const (
	DefaultStartTimeout = 60 * time.Second
	DefaultGrace        = 2 * time.Second
	DefaultOutputLimit  = 20000
	// DefaultCheckpoints is how many checkpoints for rewind a runtime
	// keeps when [Config.Checkpoints] is nil (docs/rewind.md); a runtime
	// whose hello names none keeps as many (MAX_CHECKPOINTS in
	// pyruntime/mcp/_rewind.py).
	DefaultCheckpoints = 8
	// MaxCheckpoints bounds [Config.Checkpoints]: each checkpoint is a
	// process of the container.
	MaxCheckpoints = 32
	// MaxInFlight bounds the requests one cell has in flight on the host
	// at once, answers still to be written included. The runtime waits
	// for a free slot before it sends a request (MAX_IN_FLIGHT in
	// pyruntime/mcp/_channel.py), so however many calls the code gathers,
	// the host keeps reading its frames and its memory stays bounded; a
	// request beyond the bound (a runtime that does not wait) is refused.
	// The host never stops reading: Podman's attach stops taking the
	// container's stdin while its stdout is not read, so a pause would
	// hold the answers that free the slots.
	MaxInFlight = 64
)

// Config configures a [Session].
type Config struct {
	// Image is the sandbox image. Empty means the one ChooseImage names
	// as each container starts, or [DefaultImage] without ChooseImage.
	Image string
	// ChooseImage picks the image when Image is empty.
	ChooseImage func(ctx context.Context, eng Engine) (string, error)
	// User is the uid:gid the code runs as. Empty means 65534:65534.
	User string
	// Limits bound the container's resources.
	Limits Limits
	// StartTimeout bounds creating the container and loading the runtime.
	// Zero means [DefaultStartTimeout].
	StartTimeout time.Duration
	// Grace is how long interrupted code gets to stop before the container
	// is replaced. Zero means [DefaultGrace].
	Grace time.Duration
	// OutputLimit is how many characters of each stream a result keeps
	// (head and tail). The runtime saves a stream that prints more to a
	// file in the workspace, which the cut output names. Zero means
	// [DefaultOutputLimit].
	OutputLimit int
	// Workspace, when set, is the persistent /workspace (a volume or a
	// host directory); nil means a tmpfs that ends with the container.
	Workspace *Mount
	// Mounts are more host directories or volumes for the code.
	Mounts []Mount
	// Channel says how frames travel; empty means [DefaultChannel]. A
	// detachable sandbox's always travel over the attach stream.
	Channel ChannelMode
	// Detachable, when set, makes the sandbox outlive this bridge, for
	// another to adopt ([Detachable], [Manager.Adopt]); nil: the sandbox
	// ends with its session.
	Detachable *Detachable
	// Checkpoints is how many checkpoints for rewind the runtime keeps
	// (it forks one after each cell): 0 takes none, so rewind is off and
	// cells run back to back without waiting for a fork; nil means
	// [DefaultCheckpoints] (the hello names none, and the runtime keeps
	// its default, the same number); at most [MaxCheckpoints].
	Checkpoints *int
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
}

func (cfg Config) withDefaults() Config {
	if cfg.Image == "" && cfg.ChooseImage == nil {
		cfg.Image = DefaultImage
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.OutputLimit == 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Channel == "" {
		cfg.Channel = DefaultChannel
	}
	return cfg
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
	// Value is the repr of the cell's final expression (or its TOON text,
	// when the request asked and it is JSON data); HasValue is false when
	// there was none or it was None.
	Value    string
	HasValue bool
	// Traceback is the error the code raised, showing the user's frames.
	Traceback string
	Images    []Image
	// StateKept is false when the container was replaced, so variables,
	// imports and files from earlier cells are gone.
	StateKept bool
	// Rewound is what the rewind(n) the cell asked for restored, or why
	// nothing was (sandbox/rewind.go); nil when it asked none.
	Rewound *protocol.Rewound
	// Forked is the fork the cell's fork() made, or why none was
	// (sandbox/fork.go); nil when it asked none.
	Forked *protocol.Forked
	// TakenBack is where the runtime was when this cell's Run took the
	// session back from another bridge that had taken it over (nil: it
	// did not need to).
	TakenBack *Resumed
	// Notice explains a restart or a crash, for the agent.
	Notice   string
	Duration time.Duration
}

// Request is one cell to run.
type Request struct {
	Code    string
	Timeout time.Duration
	// TOON asks for a final value that is JSON data as TOON text.
	TOON bool
	// Caller answers the cell's requests and sees its output; nil answers
	// none.
	Caller Caller
}

// Session is one persistent sandbox: one container at a time, with the
// runtime loaded. Cells run one at a time, in the order they arrive; Run is
// safe for concurrent use. Where the session is in its life (no container,
// starting, ready, running a cell, stopping one, replacing its container,
// closed) is its [state]. Make sessions with [Manager.NewSession].
type Session struct {
	cfg    Config
	host   Host
	engine func(context.Context) (Engine, error)
	log    *slog.Logger
	turn   chan struct{} // holds a token while a cell runs
	warm   *WarmPool     // where new containers come from first, or nil
	notes  *channelNotes // the manager's: which channel sandboxes use

	closeOnce sync.Once     // every Close returns once the container is gone
	letGo     atomic.Bool   // a cell's runtime stopped answering: detached, see [Session.LetGo]
	mu        sync.Mutex    // guards the fields below
	st        state         // see [state]; changed only by move
	cur       *live         // the container, while st holds one
	changed   chan struct{} // closed and made anew at each move: wakes those who wait for one
	starting  *pendingStart // the start in progress, while st is starting
	nextID    int64
}

// pendingStart is a start in progress. Close cancels its context and
// waits for done.
type pendingStart struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed once the start ended and cleaned up
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

	if req.Caller == nil {
		req.Caller = noCaller{}
	}
	start := time.Now()
	c, err := s.container(ctx, true)
	if err != nil {
		return nil, err
	}
	res := s.newCell(ctx, c, req).run() // a channel another bridge took: the cell takes it back (channelEnded)
	res.Duration = time.Since(start)
	return res, nil
}

// container returns the session's container, starting one when there is
// none, or waiting for the start or the replacement in progress. With
// forCell, the caller holds the turn and the session moves from ready to
// running as it gets the container.
func (s *Session) container(ctx context.Context, forCell bool) (*live, error) {
	for {
		s.mu.Lock()
		switch s.st {
		case stateClosed:
			s.mu.Unlock()
			return nil, ErrClosed
		case stateEmpty:
			st, err := s.beginStart(ctx)
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
			if err = s.finishStart(st); err != nil {
				return nil, err
			}
			continue // ready now, unless Close came first
		case stateReady, stateRunning, stateStopping:
			var err error
			if forCell {
				err = s.move(stateRunning)
			}
			c := s.cur
			s.mu.Unlock()
			return c, err
		}
		changed := s.changed // starting, replacing: wait for its end
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// beginStart moves the session to starting and returns the start. The
// caller holds s.mu.
func (s *Session) beginStart(ctx context.Context) (*pendingStart, error) {
	if err := s.move(stateStarting); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s.starting = &pendingStart{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	return s.starting, nil
}

// finishStart gets a container for the start st and moves the session to
// ready with it, or back to empty when that failed. A start that Close
// cancelled removes what it got and is [ErrClosed].
func (s *Session) finishStart(st *pendingStart) error {
	defer close(st.done)
	defer st.cancel()
	c, err := s.acquire(st.ctx)
	s.mu.Lock()
	s.starting = nil
	if s.st == stateClosed {
		s.mu.Unlock()
		if c != nil {
			c.discard(s.log)
		}
		return ErrClosed
	}
	if err != nil {
		_ = s.move(stateEmpty)
		s.mu.Unlock()
		return err
	}
	s.cur = c
	_ = s.move(stateReady)
	s.mu.Unlock()
	return nil
}

// replace removes c, the container a cell lost: the session is replacing
// while it goes, and then empty, so the next Run starts a fresh one. After
// Close, which removes c itself, it only waits for that.
func (s *Session) replace(c *live) {
	s.mu.Lock()
	err := s.move(stateReplacing)
	if err == nil {
		s.cur = nil
	}
	s.mu.Unlock()
	c.discard(s.log)
	if err != nil {
		return
	}
	s.mu.Lock()
	_ = s.move(stateEmpty)
	s.mu.Unlock()
}

// settle ends a cell that kept its container: the session is ready for
// the next. After Close it stays closed.
func (s *Session) settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.move(stateReady)
}

// Python reports the sandbox's Python version, or "" while there is no
// container (before the first Run, while one starts or is replaced).
func (s *Session) Python() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.current(); c != nil {
		return c.python
	}
	return ""
}

// Channel says what the current sandbox's frames travel over: "direct (a
// Unix socket ...)", or "attach" and why; "" while there is no container.
func (s *Session) Channel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c := s.current(); {
	case c == nil:
		return ""
	case c.channel == channelDirect:
		return "direct (a Unix socket the bridge owns, mounted at " + ChannelDir + ")"
	default:
		return "attach (the engine's attach stream: " + c.why + ")"
	}
}

// Close removes the container, or cancels the start in progress and
// waits for it. A cell still running ends as crashed. Close is idempotent,
// and every call returns once the container is gone (a Close that raced
// another used to return while it was being removed, and one that came
// during a start returned while the container was still being made).
func (s *Session) Close() error {
	s.closeWith(func(c *live) { c.discard(s.log) })
	return nil
}

// closeWith closes the session once: it cancels a start in progress and
// waits for it, then hands the container, if any, to end (removed by
// Close, detached by Detach). It reports whether this call closed it.
func (s *Session) closeWith(end func(c *live)) bool {
	closed := false
	s.closeOnce.Do(func() {
		s.mu.Lock()
		c, st := s.current(), s.starting
		_ = s.move(stateClosed)
		s.cur = nil
		s.mu.Unlock()
		if st != nil {
			st.cancel()
			<-st.done
		}
		if c != nil {
			end(c)
		}
		closed = true
	})
	return closed
}

// noHost is the Host of a session made without one.
type noHost struct{}

func (noHost) Servers() []protocol.ServerInfo { return nil }
func (noHost) StartFiles() []protocol.File    { return nil }
func (noHost) Stale() []string                { return nil }

// noCaller is the Caller of a cell run without one.
type noCaller struct{}

func (noCaller) Output(string, string) {}
func (noCaller) Answer(context.Context, protocol.RPC) (json.RawMessage, error) {
	return nil, errors.New("this bridge answers no requests from the sandbox")
}

// Put writes files into the sandbox, starting its container when there is
// none; it works between cells and while one runs (an install a cell asked
// for). See [protocol.File] for the paths the runtime accepts.
func (s *Session) Put(ctx context.Context, files []protocol.File) error {
	c, err := s.container(ctx, false)
	if err != nil {
		return err
	}
	return c.put(ctx, files)
}

func (c *live) put(ctx context.Context, files []protocol.File) error {
	st, err := ask(ctx, c, &c.puts, func(id int64) protocol.Frame { return protocol.Put{ID: id, Files: files} }, "the files were written")
	if err != nil {
		return err
	}
	if st.Error != "" {
		return fmt.Errorf("sandbox: writing files into the sandbox: %s", st.Error)
	}
	return nil
}
