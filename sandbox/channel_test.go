package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// directEngine is procEngine with the direct channel: a local process
// sees the socket's directory where the host has it, or at path when set.
type directEngine struct {
	procEngine
	path string
}

func (e directEngine) ChannelPath(dir string) (string, error) {
	if e.path != "" {
		return e.path, nil
	}
	return dir, nil
}

func connectLine(t *testing.T, secret string) []byte {
	t.Helper()
	b, err := protocol.Encode(protocol.Connect{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDirectListenerAcceptsOnlyTheSecret: a connection with another
// secret is closed unanswered, the one with the secret is accepted, and
// then the socket and its directories are gone, so nothing can connect
// again.
func TestDirectListenerAcceptsOnlyTheSecret(t *testing.T) {
	l, err := listenDirect()
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	path := filepath.Join(l.dir, channelSocket)
	st, err := os.Stat(l.root)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("private directory: %v %v", st.Mode(), err)
	}
	type accepted struct {
		conn net.Conn
		err  error
	}
	got := make(chan accepted, 1)
	go func() {
		conn, aerr := l.accept(context.Background())
		got <- accepted{conn, aerr}
	}()

	wrong, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("0", len(l.secret))
	if _, err = wrong.Write(connectLine(t, other)); err != nil {
		t.Fatal(err)
	}
	if n, rerr := wrong.Read(make([]byte, 1)); n != 0 || rerr == nil {
		t.Fatalf("a wrong secret: read %d, %v; want the connection closed", n, rerr)
	}
	wrong.Close()

	right, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the runtime's connection after a refused one: %v", err)
	}
	defer right.Close()
	if _, err := right.Write(connectLine(t, l.secret)); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.conn.Close()
	if _, err := right.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(a.conn, buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("the accepted connection read %q, %v", buf, err)
	}

	if _, err := os.Stat(l.root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the accept the socket's directory is still there (%v)", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Fatal("a second connection was possible after the accept")
	}
}

// TestDirectListenerEndsWithItsContext: no runtime connects, the start
// times out, and nothing is left on the host.
func TestDirectListenerEndsWithItsContext(t *testing.T) {
	l, err := listenDirect()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, aerr := l.accept(ctx); done <- aerr }()
	silent, err := net.Dial("unix", filepath.Join(l.dir, channelSocket)) // connects, says nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("accept: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(l.root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket's directory is still there (%v)", err)
	}
}

func directSession(t *testing.T, eng Engine, cfg Config) *Session {
	t.Helper()
	m := &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) { return eng, nil }}
	s := m.NewSession(cfg, &testHost{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (s *Session) channelNow() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current()
	return c.channel, c.why
}

// TestSessionUsesTheDirectChannel: the real runtime takes the socket, and
// cells with output and RPCs work over it.
func TestSessionUsesTheDirectChannel(t *testing.T) {
	s := directSession(t, directEngine{}, Config{})
	res := run(t, s, Request{Code: "print('over the socket')\nawait runtime.list_servers()"})
	if ch, why := s.channelNow(); ch != channelDirect {
		t.Fatalf("channel %s (%s), want direct", ch, why)
	}
	if res.Stdout.Text != "over the socket\n" || !res.HasValue {
		t.Fatalf("result %+v", res)
	}
	if got := s.Channel(); !strings.HasPrefix(got, "direct") {
		t.Fatalf("Channel() = %q", got)
	}
}

// TestSessionFallsBackToAttach: where the runtime cannot reach the
// socket it says why and the frames stay on stdin and stdout; with the
// attach channel configured, no socket is offered at all.
func TestSessionFallsBackToAttach(t *testing.T) {
	s := directSession(t, directEngine{path: filepath.Join(t.TempDir(), "nothing-here")}, Config{})
	run(t, s, Request{Code: "print(1)"})
	if ch, why := s.channelNow(); ch != channelAttach || !strings.Contains(why, "could not connect") {
		t.Fatalf("channel %s (%s), want attach because the runtime could not connect", ch, why)
	}

	s = directSession(t, directEngine{}, Config{Channel: ChannelAttach})
	run(t, s, Request{Code: "print(1)"})
	if ch, why := s.channelNow(); ch != channelAttach || !strings.Contains(why, "configured") {
		t.Fatalf("channel %s (%s), want attach as configured", ch, why)
	}
}

// TestDirectChannelBreakEndsTheContainer: a runtime killed under a cell
// closes the socket, and the cell ends as crashed as it does on the
// attach stream.
func TestDirectChannelBreakEndsTheContainer(t *testing.T) {
	s := directSession(t, directEngine{}, Config{})
	run(t, s, Request{Code: "x = 1"})
	res, err := s.Run(context.Background(), Request{Code: "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusCrashed || res.StateKept {
		t.Fatalf("status %s, state kept %v", res.Status, res.StateKept)
	}
}

// failingEngine is directEngine whose Start fails after it saw the
// channel's directory, as a create the bridge gave up on.
type failingEngine struct {
	directEngine
	channel *string
}

func (e failingEngine) Start(_ context.Context, spec ContainerSpec) (Container, error) {
	*e.channel = spec.Channel
	return nil, errors.New("the engine did not answer in time")
}

// TestFailedStartLeavesNoRemadeDir: after a failed start the channel's
// directories stay, empty and private, until the bridge closes, so that an
// engine still working on the create (Podman's compat API makes a missing
// bind-mount source, as root, mode 0755) finds them instead of making a
// directory of its own that nothing removes; closing removes them. Before,
// they were removed at once and the engine's stayed.
func TestFailedStartLeavesNoRemadeDir(t *testing.T) {
	tmp, err := os.MkdirTemp("", "cb") // short: a socket's path has a limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	var channel string
	m := &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) {
		return failingEngine{channel: &channel}, nil
	}}
	s := m.NewSession(Config{}, &testHost{})
	res, err := s.Run(context.Background(), Request{Code: "print(1)", Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("the start did not fail as the engine did: %+v, %v", res, err)
	}
	_ = s.Close()
	if channel == "" {
		t.Fatal("no channel directory was offered to the engine")
	}
	root := filepath.Dir(channel)
	if err := os.MkdirAll(channel, 0o755); err != nil { // the engine's late create
		t.Fatal(err)
	}
	if fi, err := os.Lstat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the channel's directory after the engine's late create (%v): not the bridge's own (0700)", err)
	}
	if _, err := os.Lstat(filepath.Join(channel, channelSocket)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket is still there (%v)", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the channel's directory outlived the bridge's close (%v)", err)
	}
}
