package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

// adoptConfig is a detachable session's configuration on this run's
// engine and image: the handle's digest (its resume key derived from it,
// as a handle layer would derive both from the handle), the principal
// given.
func adoptConfig(digest, principal string, idle time.Duration) sandbox.Config {
	return sandbox.Config{
		Image:      testImage,
		Detachable: &sandbox.Detachable{Digest: digest, Key: "key-of-" + digest, Principal: principal, Idle: idle},
		Log:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

func newDigest(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// runCell runs code in s and fails the test unless it ends ok.
func runCell(t *testing.T, ctx context.Context, s *sandbox.Session, code string) *sandbox.Result {
	t.Helper()
	res, err := s.Run(ctx, sandbox.Request{Code: code, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("running %q: %v", code, err)
	}
	if res.Status != sandbox.StatusOK {
		t.Fatalf("running %q: %s %s %s %s", code, res.Status, res.Traceback, res.Notice, res.Stderr.Text)
	}
	return res
}

// handleContainers lists the containers labelled with digest.
func handleContainers(t *testing.T, ctx context.Context, m *sandbox.Manager, digest string) []sandbox.ContainerInfo {
	t.Helper()
	eng, err := m.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := eng.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []sandbox.ContainerInfo
	for _, c := range list {
		if c.Labels[sandbox.LabelHandle] == digest {
			out = append(out, c)
		}
	}
	return out
}

// TestAdoptDetachedSandbox: manager A starts a detachable sandbox and a
// cell sets x; A lets go of it as a bridge that dies does (Detach: the
// channel dropped, the container kept); manager B, another bridge on the
// same engine, adopts it by its handle's digest and finds x, and learns
// where the runtime was. Adoption by another principal is refused in the
// very words of a handle that does not exist; adoption without the
// handle's resume key is refused by the runtime, which stays adoptable.
func TestAdoptDetachedSandbox(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	digest := newDigest(t)

	a := sandbox.NewManager(engineOptions())
	defer a.Close()
	sa := a.NewSession(adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	runCell(t, ctx, sa, "x = 41\nprint('set')")
	if got := handleContainers(t, ctx, a, digest); len(got) != 1 || got[0].Labels[sandbox.LabelPrincipal] != sandbox.PrincipalLabel("token:alice") {
		t.Fatalf("the detachable sandbox's containers: %+v; want one labelled with the handle's digest and principal", got)
	}
	if err := sa.Detach(); err != nil {
		t.Fatal(err)
	}

	b := sandbox.NewManager(engineOptions())
	defer b.Close()
	_, _, errOther := b.Adopt(ctx, adoptConfig(digest, "token:mallory", 0), nil)
	_, _, errNone := b.Adopt(ctx, adoptConfig(newDigest(t), "token:alice", 0), nil)
	if !errors.Is(errOther, sandbox.ErrNoSandbox) || errOther.Error() != errNone.Error() {
		t.Fatalf("another principal's adoption: %v; a handle nobody has: %v; want the same ErrNoSandbox", errOther, errNone)
	}

	wrongKey := adoptConfig(digest, "token:alice", 0)
	wrongKey.Detachable.Key = "a-key-that-was-never-derived-from-this-handle"
	if _, _, err := b.Adopt(ctx, wrongKey, nil); err == nil {
		t.Fatal("a bridge without the handle's resume key adopted the sandbox")
	}

	began := time.Now()
	sb, where, err := b.Adopt(ctx, adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("adoption (list, exec of the relay, resume) took %s", time.Since(began).Round(time.Millisecond))
	defer func() {
		if left := handleContainers(t, context.Background(), b, digest); len(left) != 0 {
			t.Errorf("containers left after Close: %+v", left)
		}
	}()
	defer sb.Close()
	if where.Cell != 1 || where.Running || where.Done == nil || where.Done.Status != "ok" || where.Stdout != "set\n" {
		t.Fatalf("where the runtime was: %+v; want cell 1, ended ok, its output", where)
	}
	res := runCell(t, ctx, sb, "x + 1")
	if res.Value != "42" || !res.StateKept {
		t.Fatalf("after adoption x + 1 = %q (state kept %v); want 42 from the interpreter A started", res.Value, res.StateKept)
	}

	// A rewind after the adoption wakes a checkpoint taken on B's channel;
	// that interpreter can be adopted again (its resume socket's threads
	// start anew in it).
	runCell(t, ctx, sb, "x = 100")
	if res := runCell(t, ctx, sb, "rewind(1)"); res.Rewound == nil {
		t.Fatalf("rewind(1) after adoption: %+v", res)
	}
	if err = sb.Detach(); err != nil {
		t.Fatal(err)
	}
	c := sandbox.NewManager(engineOptions())
	defer c.Close()
	sc, _, err := c.Adopt(ctx, adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	if err != nil {
		t.Fatalf("adopting the rewound interpreter: %v", err)
	}
	defer sc.Close()
	if res := runCell(t, ctx, sc, "x"); res.Value != "41" {
		t.Fatalf("x after rewind(1) and another adoption: %q, want 41", res.Value)
	}
}

// TestDetachedOrphanEndsItself: a detachable sandbox no bridge comes back
// for ends by itself at its idle deadline, and the engine leaves no
// container behind.
func TestDetachedOrphanEndsItself(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	digest := newDigest(t)
	m := sandbox.NewManager(engineOptions())
	defer m.Close()
	s := m.NewSession(adoptConfig(digest, "token:alice", time.Second), nil)
	runCell(t, ctx, s, "x = 1")
	if err := s.Detach(); err != nil {
		t.Fatal(err)
	}
	// Wait for the runtime's own deadline: poll the engine until the
	// container is gone (the test's context bounds the wait). A Pod ends
	// (its init exits once the runtime is gone) and is deleted by any
	// replica's sweep, as no replica owns it.
	left := func() []sandbox.ContainerInfo {
		list := handleContainers(t, ctx, m, digest)
		if onKubernetes() {
			return runningOnly(list)
		}
		return list // the engine removes a detachable container once it stops
	}
	for len(left()) != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the orphan is still there: %+v", handleContainers(t, context.Background(), m, digest))
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, _, err := m.Adopt(ctx, adoptConfig(digest, "token:alice", 0), nil); !errors.Is(err, sandbox.ErrNoSandbox) {
		t.Fatalf("adopting the ended orphan: %v; want ErrNoSandbox", err)
	}
	if onKubernetes() {
		eng, err := m.Engine(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.RemoveStale(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left := handleContainers(t, ctx, m, digest); len(left) != 0 {
		t.Fatalf("the ended orphan was left behind: %+v", left)
	}
}

// runningOnly keeps the running containers of list.
func runningOnly(list []sandbox.ContainerInfo) []sandbox.ContainerInfo {
	var out []sandbox.ContainerInfo
	for _, c := range list {
		if c.State == "running" {
			out = append(out, c)
		}
	}
	return out
}

// adoptHelperEnv names the handle digest a helper bridge process serves:
// the test binary run again as a bridge that a test can SIGKILL.
const adoptHelperEnv = "CODEBRIDGE_ADOPT_HELPER"

// TestAdoptHelperBridge is not a test: run by TestAdoptAfterBridgeKilled
// as a separate process, it is bridge A. It starts a detachable sandbox,
// sets x, starts a cell that prints and then waits for a file, prints
// READY on its stdout once that output arrived, and waits to be killed.
func TestAdoptHelperBridge(t *testing.T) {
	digest := os.Getenv(adoptHelperEnv)
	if digest == "" {
		t.Skip("a helper process of TestAdoptAfterBridgeKilled")
	}
	ctx := context.Background()
	m := sandbox.NewManager(engineOptions())
	s := m.NewSession(adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	runCell(t, ctx, s, "x = 41")
	seen := make(chan struct{})
	_, _ = s.Run(ctx, sandbox.Request{Timeout: 10 * time.Minute, Caller: outputSignal{seen},
		Code: "import os, time\nprint('mid', flush=True)\nwhile not os.path.exists('/tmp/release'):\n    time.sleep(0.02)\nx += 1\nprint('after')"})
	t.Fatal("the cell ended: the helper bridge was to be killed first")
}

// outputSignal prints READY once the cell's first output arrives.
type outputSignal struct{ seen chan struct{} }

func (o outputSignal) Output(string, string) {
	select {
	case <-o.seen:
	default:
		close(o.seen)
		os.Stdout.WriteString("READY\n")
	}
}

func (outputSignal) Answer(context.Context, protocol.RPC) (json.RawMessage, error) {
	return nil, errors.New("no requests")
}

// TestAdoptAfterBridgeKilled: bridge A (another process) is killed with
// SIGKILL while a cell runs; bridge B adopts the sandbox, learns that the
// cell runs and what it printed, lets it finish, and a cell of its own
// sees the variables that cell and the one before it set.
func TestAdoptAfterBridgeKilled(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	digest := newDigest(t)
	helper := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAdoptHelperBridge$", "-test.v")
	helper.Env = append(os.Environ(), adoptHelperEnv+"="+digest, "CODEBRIDGE_BIN="+binary)
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err = helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = helper.Process.Kill() }()
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "READY" {
	}
	if lines.Text() != "READY" {
		t.Fatalf("the helper bridge ended before its cell ran: %v", helper.Wait())
	}
	if err = helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()

	b := sandbox.NewManager(engineOptions())
	defer b.Close()
	s, where, err := b.Adopt(ctx, adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if where.Cell != 2 || !where.Running || where.Stdout != "mid\n" {
		t.Fatalf("where the runtime was: %+v; want cell 2 running, its output so far", where)
	}
	if err := s.Put(ctx, []protocol.File{{Path: "/tmp/release", Data: []byte("go")}}); err != nil {
		t.Fatal(err)
	}
	if res := runCell(t, ctx, s, "x"); res.Value != "42" {
		t.Fatalf("x after the adopted cell finished: %q, want 42", res.Value)
	}
}
