package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// fakeEngine starts containers whose runtime is a goroutine of the test
// that plays the runtime's side of the frame protocol
// (pyruntime/PROTOCOL.md) over pipes. Everything it makes blocks on
// channels and pipes only, so that it runs inside a testing/synctest
// bubble, where the session's timers run on the bubble's clock. It has
// no direct channel: frames travel over the attach stream.
type fakeEngine struct {
	procEngine // the engine's other methods: nothing behind them

	// hold, when set, keeps each Start waiting until it is closed or the
	// start's context ends.
	hold chan struct{}
	// silent runtimes never say they are ready.
	silent bool
	// failures is how many starts fail before one works.
	failures int

	mu         sync.Mutex
	started    int
	removed    int
	containers []*fakeSandbox
}

func (e *fakeEngine) Start(ctx context.Context, _ ContainerSpec) (Container, error) {
	e.mu.Lock()
	e.started++
	n := e.started
	e.mu.Unlock()
	if n <= e.failures {
		return nil, errors.New("the engine cannot start a container now (a fake failure)")
	}
	if e.hold != nil {
		select {
		case <-e.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &fakeSandbox{e: e, id: fmt.Sprintf("fake-%d", n), in: inW, out: outR, stdinR: inR}
	e.mu.Lock()
	e.containers = append(e.containers, c)
	e.mu.Unlock()
	rt := &fakeRuntime{r: bufio.NewReader(inR), w: outW, silent: e.silent}
	go rt.serve()
	return c, nil
}

// counts returns how many containers started and how many were removed.
func (e *fakeEngine) counts() (started, removed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started, e.removed
}

// made is how many containers Start made (it counts the starts that
// failed too).
func (e *fakeEngine) made() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.containers)
}

// kill ends the runtime of the n-th container (from 1) as a crash does:
// its stream of frames ends.
func (e *fakeEngine) kill(n int) {
	e.mu.Lock()
	c := e.containers[n-1]
	e.mu.Unlock()
	c.stdinR.CloseWithError(io.ErrUnexpectedEOF)
}

// fakeSandbox is a container of a [fakeEngine].
type fakeSandbox struct {
	e      *fakeEngine
	id     string
	in     *io.PipeWriter
	out    *io.PipeReader
	stdinR *io.PipeReader // the runtime's end of stdin
	once   sync.Once
}

func (c *fakeSandbox) ID() string            { return c.id }
func (c *fakeSandbox) Stdin() io.WriteCloser { return c.in }
func (c *fakeSandbox) Stdout() io.Reader     { return c.out }
func (c *fakeSandbox) Exited(context.Context, time.Duration) string {
	return "exited with code 1 (a fake container)"
}
func (c *fakeSandbox) Remove(context.Context) error {
	c.once.Do(func() {
		c.e.mu.Lock()
		c.e.removed++
		c.e.mu.Unlock()
		c.in.Close()
		c.out.Close()
	})
	return nil
}

// fakeRuntime is the runtime of a fake container. Cells do what their
// code says:
//
//	ok      ends at once, ok
//	stops   runs until it is interrupted, then ends as the interrupted code does
//	hangs   never ends, and ignores the interrupt
//	dies    ends the runtime (a crash)
//	floods  sends a thousand frames of a type no host knows, then ends ok
//
// Put frames are answered as written.
type fakeRuntime struct {
	r      *bufio.Reader
	w      *io.PipeWriter
	silent bool
	stops  int64 // the cell that waits for its interrupt, or 0
	moved  bool  // "moved once" moved its channel already
	// waiting is true once the channel moved to another host: every
	// frame is dropped unread but a resume, as the runtime does; read is
	// the largest exec id read.
	waiting bool
	read    int64
	// handovers is the code of the last cell that forked asking for a
	// handover: how the runtime answers the host's handover frame.
	handovers string
}

func (rt *fakeRuntime) serve() {
	defer rt.w.Close()
	if err := rt.boot(); err != nil || rt.silent {
		_, _ = io.Copy(io.Discard, rt.r) // reads on, says nothing, until removed
		return
	}
	for {
		line, err := rt.r.ReadBytes('\n')
		if err != nil {
			return
		}
		f, err := protocol.Decode(line)
		if err != nil {
			rt.w.CloseWithError(err)
			return
		}
		if !rt.handle(f) {
			return
		}
	}
}

// boot reads the bootstrap (a 16-byte length and the archive) and the
// hello, and says it is ready.
func (rt *fakeRuntime) boot() error {
	var header [16]byte
	if _, err := io.ReadFull(rt.r, header[:]); err != nil {
		return err
	}
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(header[:])), &n); err != nil {
		return err
	}
	if _, err := io.CopyN(io.Discard, rt.r, n); err != nil {
		return err
	}
	if _, err := rt.r.ReadBytes('\n'); err != nil { // hello
		return err
	}
	if rt.silent {
		return nil
	}
	return rt.send(protocol.Ready{V: protocol.Version, Python: "3.12 (fake)"})
}

// handle answers one host frame; false when the runtime ends.
func (rt *fakeRuntime) handle(f protocol.Frame) bool {
	if _, resume := f.(protocol.Resume); rt.waiting && !resume {
		return true
	}
	switch f := f.(type) {
	case protocol.Exec:
		return rt.exec(f)
	case protocol.Interrupt:
		if f.ID == rt.stops {
			rt.stops = 0
			return rt.done(f.ID, "interrupted") == nil
		}
	case protocol.Put:
		return rt.send(protocol.Stored{ID: f.ID}) == nil
	case protocol.Resume: // a bridge takes the channel back (the key is not checked here)
		rt.waiting = false
		return rt.send(protocol.Resumed{V: protocol.Version, Python: "3.12 (fake)", Last: rt.read, Yours: rt.read}) == nil
	case protocol.Handover:
		if rt.handovers == "asks for handovers" {
			return rt.send(protocol.Forked{Handover: true}) == nil
		}
		return rt.send(protocol.Forked{OK: true, Key: "k", Dir: "/workspace/.forks/a"}) == nil
	}
	return true
}

// exec runs one cell as its code names it; false when the runtime ends.
func (rt *fakeRuntime) exec(f protocol.Exec) bool {
	if f.Code != "moved once" || rt.moved {
		rt.read = f.ID
	}
	switch f.Code {
	case "ok":
		return rt.done(f.ID, "ok") == nil
	case "stops":
		rt.stops = f.ID
	case "dies":
		return false
	case "moves": // another host takes the channel over as the cell runs
		_ = rt.send(protocol.Moved{})
		return false
	case "moved once": // as if another host took the channel just before the exec came
		if rt.moved {
			return rt.done(f.ID, "ok") == nil
		}
		rt.moved, rt.waiting = true, true
		return rt.send(protocol.Moved{}) == nil // the exec is dropped unread
	case "ok, then moves": // ... once the cell ended
		rt.waiting = true
		return rt.done(f.ID, "ok") == nil && rt.send(protocol.Moved{}) == nil
	case "forks after a handover", "asks for handovers": // a runtime no init follows yet (PROTOCOL.md, "Fork")
		rt.handovers = f.Code
		return rt.send(protocol.Done{ID: f.ID, Status: "ok", Fork: true}) == nil &&
			rt.send(protocol.Forked{Handover: true}) == nil
	case "floods":
		for range 1000 {
			if _, err := rt.w.Write([]byte(`{"t":"bogus"}` + "\n")); err != nil {
				return false
			}
		}
		return rt.done(f.ID, "ok") == nil
	}
	return true
}

func (rt *fakeRuntime) done(id int64, status string) error {
	d := protocol.Done{ID: id, Status: status}
	if status == "interrupted" {
		tb := "KeyboardInterrupt"
		d.Error = &tb
	}
	return rt.send(d)
}

func (rt *fakeRuntime) send(f protocol.Frame) error {
	line, err := protocol.Encode(f)
	if err != nil {
		return err
	}
	_, err = rt.w.Write(line)
	return err
}

// fakeSession is a session on eng with cfg (frames on the attach stream,
// diagnostics dropped).
func fakeSession(eng *fakeEngine, cfg Config) *Session {
	cfg.Channel = ChannelAttach
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &Manager{log: cfg.Log, connect: func(context.Context) (Engine, error) { return eng, nil }}
	return m.NewSession(cfg, nil)
}
