package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

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
// very words of a handle that does not exist.
func TestAdoptDetachedSandbox(t *testing.T) {
	needEnv(t)
	localEngineOnly(t, "adoption on Kubernetes (Pods and a Lease) is designed, not built")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	digest := newDigest(t)

	a := sandbox.NewManager(engineOptions())
	defer a.Close()
	sa := a.NewSession(adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	runCell(t, ctx, sa, "x = 41\nprint('set')")
	if got := handleContainers(t, ctx, a, digest); len(got) != 1 || got[0].Labels[sandbox.LabelPrincipal] != "token:alice" {
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

	sb, where, err := b.Adopt(ctx, adoptConfig(digest, "token:alice", 10*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sb.Close()
		if left := handleContainers(t, context.Background(), b, digest); len(left) != 0 {
			t.Errorf("containers left after Close: %+v", left)
		}
	}()
	if where.Cell != 1 || where.Running || where.Done == nil || where.Done.Status != "ok" || where.Stdout != "set\n" {
		t.Fatalf("where the runtime was: %+v; want cell 1, ended ok, its output", where)
	}
	res := runCell(t, ctx, sb, "x + 1")
	if res.Value != "42" || !res.StateKept {
		t.Fatalf("after adoption x + 1 = %q (state kept %v); want 42 from the interpreter A started", res.Value, res.StateKept)
	}
}

// TestDetachedOrphanEndsItself: a detachable sandbox no bridge comes back
// for ends by itself at its idle deadline, and the engine leaves no
// container behind.
func TestDetachedOrphanEndsItself(t *testing.T) {
	needEnv(t)
	localEngineOnly(t, "adoption on Kubernetes (Pods and a Lease) is designed, not built")
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
	// container is gone (the test's context bounds the wait).
	for len(handleContainers(t, ctx, m, digest)) != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the orphan is still there: %+v", handleContainers(t, context.Background(), m, digest))
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, _, err := m.Adopt(ctx, adoptConfig(digest, "token:alice", 0), nil); !errors.Is(err, sandbox.ErrNoSandbox) {
		t.Fatalf("adopting the ended orphan: %v; want ErrNoSandbox", err)
	}
}
