package sandbox

// A live container: its start (the engine's container, the runtime
// delivered through stdin, the greeting), the reader of its frames, and
// its removal. Which container a session uses is the session's [state]
// (state.go); session.go holds the session itself.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/pyruntime"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// live is one running container with its runtime loaded. Whether a
// session uses it is the session's [state]; quit and dead are the
// container's own ends, as channels for those that wait on it (an ask for
// the answer to a put or get, the reader for the cell to take a frame).
type live struct {
	ctr     Container
	out     *outbox
	frames  chan protocol.Frame
	quit    chan struct{} // closed when discard removes the container
	dead    chan struct{} // closed when the runtime's frames end
	readErr error         // valid once frames is closed
	fr      *frameReader  // what read reads; after a moved frame, the stream to take back
	python  string
	gone    sync.Once // discard runs once

	// logs logs the runtime's log frames, within the budget a container's
	// stderr has (per container, lines cut, then how much was dropped):
	// any code in the sandbox can send such frames, by any route.
	logs *engine.LogWriter
	// debugLines counts the host's debug lines about this container's
	// frames (cell.debug bounds them).
	debugLines atomic.Int64

	direct  net.Conn // the direct channel's socket, or nil on the attach stream
	channel string   // channelDirect or channelAttach
	why     string   // why not direct, on the attach stream

	puts asks[protocol.Stored]
	gets asks[protocol.Got]

	// fam counts the sessions that share the container with forks
	// (fork.go); made on first use.
	fam     *family
	famOnce sync.Once
}

// start creates a container, loads the runtime into it through stdin, and
// waits for the runtime to say it is ready.
func (s *Session) start(ctx context.Context) (*live, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	if d := s.cfg.Detachable; d != nil {
		if err := d.check(); err != nil {
			return nil, err
		}
	}
	eng, err := s.engine(ctx)
	if err != nil {
		return nil, err
	}
	image := s.cfg.Image
	if image == "" {
		if image, err = s.cfg.ChooseImage(ctx, eng); err != nil {
			return nil, err
		}
	}
	l, inside, why := s.direct(eng)
	spec := s.spec(image)
	s.detachLabels(&spec)
	if l != nil {
		spec.Channel = l.dir
	}
	ctr, err := eng.Start(ctx, spec)
	if err != nil && l != nil && mountFailed(err, l) {
		l.close()
		l, why = nil, "the engine could not mount the socket's directory: "+err.Error()
		spec.Channel = ""
		ctr, err = eng.Start(ctx, spec)
	}
	if err != nil {
		if l != nil {
			l.keepDirs() // the engine may still make the mount's source: it finds ours
		}
		return nil, err
	}
	c := &live{ctr: ctr, out: newOutbox(ctr.Stdin()), frames: make(chan protocol.Frame, 16), quit: make(chan struct{}), dead: make(chan struct{}),
		channel: channelAttach, why: why,
		logs: engine.NewLogWriter("sandbox runtime: ", engine.ContainerLogBudget, s.log.With("container", engine.Short(ctr.ID())))}
	hello := protocol.Hello{V: protocol.Version, Servers: s.host.Servers(), Files: s.host.StartFiles(), Checkpoints: s.cfg.Checkpoints,
		Pids: s.cfg.Limits.WithDefaults().Pids}
	if d := s.cfg.Detachable; d != nil {
		hello.Idle = d.idle().Seconds()
		hello.Resume = d.keyHash()
	}
	if err := c.greet(ctx, l, inside, s.log, hello); err != nil {
		reason := ctr.Exited(context.WithoutCancel(ctx), time.Second)
		c.discard(s.log)
		return nil, fmt.Errorf("sandbox: %w; the container: %s. Check that image %s has python3 (3.8 or newer)", err, reason, image)
	}
	s.notes.say(s.log, c.channel, c.why)
	s.log.Debug("sandbox ready", "container", engine.Short(ctr.ID()), "python", c.python, "channel", c.channel)
	return c, nil
}

// mountFailed reports whether a container could not start because of the
// direct channel's mount (a bind source an engine in a virtual machine
// cannot see, say).
func mountFailed(err error, l *directListener) bool {
	msg := err.Error()
	return strings.Contains(msg, l.root) || strings.Contains(strings.ToLower(msg), "mount")
}

// spec is the container every new runtime gets.
func (s *Session) spec(image string) ContainerSpec {
	return ContainerSpec{
		Image: image,
		Cmd:   []string{"python3", "-I", "-u", "-c", pyruntime.Loader()},
		Env: []string{
			// PATH too: an imported image may carry no environment at all.
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOME=/workspace", "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8",
			"PYTHONDONTWRITEBYTECODE=1", "MPLBACKEND=Agg",
		},
		Limits:    s.cfg.Limits,
		User:      s.cfg.User,
		Workspace: s.cfg.Workspace,
		Mounts:    s.cfg.Mounts,
	}
}

// greet delivers the runtime, opens the direct channel when l is not nil,
// says hello and waits for ready.
func (c *live) greet(ctx context.Context, l *directListener, inside string, log *slog.Logger, h protocol.Hello) error {
	archive := pyruntime.Archive()
	if err := c.out.write(ctx, []byte(fmt.Sprintf("%16d", len(archive))), archive); err != nil {
		if l != nil {
			l.close()
		}
		return fmt.Errorf("loading the runtime: %w", err)
	}
	if l == nil {
		go c.read(newFrameReader(c.ctr.Stdout()))
	} else if err := c.openDirect(ctx, l, inside, log); err != nil {
		return err
	}
	if h.Servers == nil {
		h.Servers = []protocol.ServerInfo{}
	}
	hello, err := protocol.Encode(h)
	if err != nil {
		return err
	}
	if err := c.out.write(ctx, hello); err != nil {
		return fmt.Errorf("greeting the runtime: %w", err)
	}
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return fmt.Errorf("the runtime stopped before it was ready: %w", c.readErr)
			}
			if r, isReady := f.(protocol.Ready); isReady {
				if r.V != protocol.Version {
					return fmt.Errorf("the runtime speaks protocol version %d and this host version %d: the runtime comes from another codebridge build (rebuild codebridge from one source tree)", r.V, protocol.Version)
				}
				c.python = r.Python
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for the runtime: %w", ctx.Err())
		}
	}
}

// read forwards the runtime's frames from fr to c.frames until the stream
// ends; then it logs how much of the runtime's log frames it dropped.
func (c *live) read(fr *frameReader) {
	c.fr = fr
	defer close(c.dead)
	defer close(c.frames)
	defer c.logs.Close()
	for {
		f, err := fr.next()
		if err != nil {
			c.readErr = err
			return
		}
		switch f := f.(type) {
		case protocol.Log:
			c.logs.Frame(f.Level, f.Msg)
			continue
		case protocol.Stored:
			c.puts.answer(f.ID, f)
			continue
		case protocol.Got:
			c.gets.answer(f.ID, f)
			continue
		case protocol.Moved: // the runtime's last frame here (adopt.go)
			c.readErr = errMoved
			return
		}
		select {
		case c.frames <- f:
		case <-c.quit:
			c.readErr = errChannelClosed
			return
		}
	}
}

// ended says why c's container stopped, waiting a little for the engine
// to know. Something outside codebridge that ended it (a Pod deleted or
// evicted) is the reason, whatever the frames or the code did.
func (c *live) ended(ctx context.Context) string {
	if o, ok := c.ctr.(engine.OutsideEnder); ok {
		if why := o.EndedOutside(ctx); why != "" {
			return why
		}
	}
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

// discard stops c's reader and writer and removes the container, which
// also ends any write stuck on its stdin. It runs once.
func (c *live) discard(log *slog.Logger) {
	c.gone.Do(func() {
		last := c.lastOfFamily()
		if !last { // forks still use the container: end only this runtime
			c.sendEnd()
		}
		close(c.quit)
		c.out.close()
		if c.direct != nil {
			c.direct.Close() // ends a write stuck on the socket
		}
		if !last {
			c.letGoStreams()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), RemoveTimeout)
		defer cancel()
		if err := c.ctr.Remove(ctx); err != nil {
			log.Warn("removing the sandbox container", "err", err)
		}
	})
}
