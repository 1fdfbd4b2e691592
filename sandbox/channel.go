package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	"github.com/codebridge/codebridge/internal/protocol"
)

// ChannelMode says how a sandbox's frames travel between the bridge and
// the runtime.
type ChannelMode string

// The channel modes. [DefaultChannel] is the default.
const (
	// ChannelAuto uses the direct channel where the engine runs on this
	// machine and the runtime can connect, and the attach stream
	// otherwise.
	ChannelAuto ChannelMode = "auto"
	// ChannelAttach always uses the engine's attach stream (the
	// container's stdin and stdout).
	ChannelAttach ChannelMode = "attach"

	DefaultChannel = ChannelAuto
)

// ParseChannelMode reads a [ChannelMode] setting.
func ParseChannelMode(s string) (ChannelMode, error) {
	switch m := ChannelMode(s); m {
	case ChannelAuto, ChannelAttach:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a channel: use auto (a Unix socket where the engine runs on this machine, else attach) or attach", s)
}

// channelSocket is the socket's name in its directory.
const channelSocket = "frames.sock"

// What a live sandbox's frames travel over, for logs and doctor.
const (
	channelDirect = "direct"
	channelAttach = "attach"
)

// directListener is the bridge's end of one sandbox's direct channel: a
// Unix socket in a directory of its own, inside a private directory (mode
// 0700) of the bridge's, so that only the sandbox it is mounted into (and
// the bridge's own user) can reach it. It accepts one connection: the
// first whose opening line carries the secret; then the listener closes
// and the socket and its directories are removed.
type directListener struct {
	root   string // the private directory, removed on close
	dir    string // the directory mounted into the sandbox
	ln     *net.UnixListener
	secret string // hex, sent to the runtime over stdin
	want   []byte // the connect line that proves the runtime
	once   sync.Once
}

// listenDirect makes the directory and the listening socket.
func listenDirect() (*directListener, error) {
	root, err := engine.MakeTempDir(engine.TempChannel) // mode 0700
	if err != nil {
		return nil, fmt.Errorf("making a private directory for the socket: %w", err)
	}
	l := &directListener{root: root, dir: filepath.Join(root, "s")}
	fail := func(err error) (*directListener, error) {
		os.RemoveAll(root)
		return nil, err
	}
	// 0711: the sandbox's user, an "other" on the host (a mapped uid under
	// rootless Podman), may pass through to the socket but not list.
	if err = os.Mkdir(l.dir, 0o711); err != nil {
		return fail(err)
	}
	if err = os.Chmod(l.dir, 0o711); err != nil { // past the umask
		return fail(err)
	}
	path := filepath.Join(l.dir, channelSocket)
	if l.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"}); err != nil {
		return fail(fmt.Errorf("listening on %s: %w", path, err))
	}
	l.ln.SetUnlinkOnClose(false) // close removes the whole directory
	if err = os.Chmod(path, 0o666); err != nil {
		l.ln.Close()
		return fail(err)
	}
	var secret [32]byte
	if _, err = rand.Read(secret[:]); err != nil {
		l.ln.Close()
		return fail(err)
	}
	l.secret = hex.EncodeToString(secret[:])
	if l.want, err = protocol.Encode(protocol.Connect{Secret: l.secret}); err != nil {
		l.ln.Close()
		return fail(err)
	}
	return l, nil
}

// offer is the channel frame that tells the runtime where to connect.
func (l *directListener) offer(inside string) protocol.Channel {
	return protocol.Channel{Path: inside + "/" + channelSocket, Secret: l.secret}
}

// accept returns the one connection that proves itself with the secret,
// and then closes the listener and removes the socket, so that nothing
// can connect later. A connection that sends anything else is closed and
// the wait goes on, until ctx ends.
func (l *directListener) accept(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, l.close) // ends a blocked Accept
	defer stop()
	won := make(chan net.Conn, 1)
	broke := make(chan error, 1)
	go func() {
		for {
			conn, err := l.ln.Accept()
			if err != nil {
				broke <- err
				return
			}
			go l.check(ctx, conn, won, cancel)
		}
	}()
	select {
	case conn := <-won:
		l.close()
		return conn, nil
	case err := <-broke:
		l.close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		select { // a winner may have come in as the listener closed
		case conn := <-won:
			l.close()
			return conn, nil
		default:
		}
		return nil, err
	}
}

// check reads conn's opening line and offers conn as the winner when it
// carries the secret (compared in constant time); otherwise, or when
// another won first, it closes conn.
func (l *directListener) check(ctx context.Context, conn net.Conn, won chan<- net.Conn, done func()) {
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(d)
	}
	unblock := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	line := make([]byte, len(l.want))
	_, err := io.ReadFull(conn, line)
	if !unblock() || err != nil || subtle.ConstantTimeCompare(line, l.want) != 1 {
		conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	select {
	case won <- conn:
		done()
	default:
		conn.Close()
	}
}

// close stops listening and removes the socket and its directories.
func (l *directListener) close() {
	l.once.Do(func() {
		l.ln.Close()
		os.RemoveAll(l.root)
	})
}

// keepDirs stops listening and removes the socket, but leaves its two
// directories, empty, in place: after a start that failed, the engine may
// still be working on the container's create, and Podman's makes a
// missing bind-mount source again, as its own user (root, mode 0755). The
// bridge removes them when it exits ([engine.SweepRemade]), or the next bridge
// does ([engine.SweepTempDirs]).
func (l *directListener) keepDirs() {
	l.once.Do(func() {
		l.ln.Close()
		os.Remove(filepath.Join(l.dir, channelSocket))
	})
}

// channelNotes logs which channel sandboxes use, once for each change (a
// manager's sandboxes usually all use the same one, for the same reason).
type channelNotes struct {
	mu   sync.Mutex
	last string
}

func (n *channelNotes) say(log *slog.Logger, channel, why string) {
	n.mu.Lock()
	changed := n.last != channel+why
	n.last = channel + why
	n.mu.Unlock()
	if !changed {
		return
	}
	if channel == channelDirect {
		log.Info("sandbox frames travel over the direct channel: a Unix socket the bridge owns, mounted at " + ChannelDir + " in each sandbox")
		return
	}
	log.Info("sandbox frames travel over the engine's attach stream", "why", why)
}

// direct prepares the direct channel for a new container on eng: the
// listener and the socket's path in the sandbox, or nil and why not.
func (s *Session) direct(eng Engine) (*directListener, string, string) {
	if s.cfg.Channel == ChannelAttach {
		return nil, "", "the attach channel is configured (--channel attach)"
	}
	if s.cfg.Detachable != nil {
		// The socket's directory is this bridge's and is removed once the
		// runtime connects; a bridge that adopts the sandbox cannot mount a
		// new one into a running container. The attach stream survives.
		return nil, "", "a detachable sandbox's channel must survive its bridge: the attach stream does"
	}
	ce, ok := eng.(engine.ChannelEngine)
	if !ok {
		return nil, "", eng.Name() + " cannot mount the bridge's socket"
	}
	l, err := listenDirect()
	if err != nil {
		return nil, "", err.Error()
	}
	inside, err := ce.ChannelPath(l.dir)
	if err != nil {
		l.close()
		return nil, "", err.Error()
	}
	return l, inside, ""
}

// openDirect offers the runtime the direct channel, after the bootstrap,
// and waits for it to connect (then frames travel over the socket) or to
// answer on its stdout that it cannot (then they stay on the attach
// stream). It starts the reader of whichever carries the frames.
func (c *live) openDirect(ctx context.Context, l *directListener, inside string, log *slog.Logger) error {
	defer l.close()
	offer, err := protocol.Encode(l.offer(inside))
	if err != nil {
		return err
	}
	if err := c.out.write(ctx, offer); err != nil {
		return fmt.Errorf("offering the direct channel: %w", err)
	}
	so := &attachStdout{r: c.ctr.Stdout()}
	stdout := newFrameReader(so)
	answer := make(chan error, 1) // the runtime's answer on stdout
	var refused protocol.Channel
	go func() { answer <- nextChannelFrame(stdout, so, &refused, c.logs) }()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type accepted struct {
		conn net.Conn
		err  error
	}
	conns := make(chan accepted, 1)
	go func() {
		conn, err := l.accept(actx)
		conns <- accepted{conn, err}
	}()
	select {
	case a := <-conns:
		if a.err != nil {
			return fmt.Errorf("waiting for the runtime to connect: %w", a.err)
		}
		c.direct = a.conn
		c.out.close() // the attach stream's stdin stays open, unused
		c.out = newOutbox(a.conn)
		c.channel = channelDirect
		so.unused.Store(true)
		go drainStdout(so, stdout, answer, log)
		go c.read(newFrameReader(a.conn))
		return nil
	case err := <-answer:
		cancel()
		if a := <-conns; a.conn != nil {
			a.conn.Close()
		}
		if err != nil {
			return fmt.Errorf("the runtime stopped before it was ready: %w", err)
		}
		c.channel, c.why = channelAttach, "the runtime could not connect: "+clipText(refused.Error, 500)
		go c.read(stdout)
		return nil
	}
}

// nextChannelFrame reads the runtime's stdout up to its channel frame,
// logging the log frames before it; any other frame is an error. Once the
// direct channel is accepted it stops: nothing on stdout is a frame then.
func nextChannelFrame(fr *frameReader, so *attachStdout, into *protocol.Channel, logs *engine.LogWriter) error {
	for {
		f, err := fr.next()
		if err != nil {
			return err
		}
		if so.unused.Load() {
			return errStdoutUnused
		}
		switch f := f.(type) {
		case protocol.Log:
			logs.Frame(f.Level, f.Msg)
		case protocol.Channel:
			*into = f
			return nil
		default:
			return protocolErrorf("sandbox: the runtime sent a %s frame before answering the channel offer", f.Type())
		}
	}
}

// errStdoutUnused ends the read of the attach stream's stdout once the
// frames travel over the direct channel.
var errStdoutUnused = errors.New("sandbox: frames travel over the direct channel")

// attachStdout is the attach stream's stdout, read for frames only until
// the direct channel is accepted (unused). After that, what a read gets is
// counted and dropped, and the reader sees the end of the stream: the
// runtime keeps the descriptor open, unused, and code in the sandbox can
// find it in /proc/self/fd, so nothing written there may become a frame.
type attachStdout struct {
	r       io.Reader
	unused  atomic.Bool
	ignored atomic.Int64 // bytes dropped by Read once unused
}

func (a *attachStdout) Read(p []byte) (int, error) {
	if a.unused.Load() {
		return 0, io.EOF
	}
	n, err := a.r.Read(p)
	if a.unused.Load() {
		a.ignored.Add(int64(n))
		return 0, io.EOF
	}
	return n, err
}

// drainStdout reads the attach stream's stdout for the container's life
// once frames travel over the socket, decoding nothing: nothing in the
// sandbox writes to it then (the runtime keeps its descriptor, unused, so
// that its end does not race the socket's accept), but an unread stdout
// would hold up the stderr that shares the stream. At the end it logs once
// how much was written there.
func drainStdout(so *attachStdout, fr *frameReader, answer <-chan error, log *slog.Logger) {
	<-answer //nolint:errcheck // the pending read ends with the stream, or with what comes next: how does not matter here
	n := int64(fr.r.Buffered()) + so.ignored.Load()
	m, _ := io.Copy(io.Discard, so.r)
	if n += m; n > 0 {
		log.Warn("the sandbox wrote to its stdout, which the direct channel does not use; ignored", "bytes", n)
	}
}
