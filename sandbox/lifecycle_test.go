package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// The tests in this file drive a session through its lifecycle on a
// [fakeEngine] inside a synctest bubble: the time limit, the interrupt,
// the grace before a replacement and the start timeout run on the
// bubble's clock, so each test knows to the nanosecond when a cell ends,
// without waiting for it.

// runAt runs one cell and returns its result and the bubble's time it took.
func runAt(t *testing.T, ctx context.Context, s *Session, code string, timeout time.Duration) (*Result, time.Duration, error) {
	t.Helper()
	start := time.Now()
	res, err := s.Run(ctx, Request{Code: code, Timeout: timeout})
	return res, time.Since(start), err
}

// wantState fails the test unless s is in want.
func wantState(t *testing.T, s *Session, want state) {
	t.Helper()
	if got := s.state(); got != want {
		t.Fatalf("the session is %s, want %s", got, want)
	}
}

// wantCounts fails the test unless eng started and removed that many
// containers.
func wantCounts(t *testing.T, eng *fakeEngine, started, removed int) {
	t.Helper()
	if s, r := eng.counts(); s != started || r != removed {
		t.Fatalf("%d containers started and %d removed, want %d and %d", s, r, started, removed)
	}
}

// TestTimeoutInterruptsAndKeepsTheContainer: at the time limit the cell
// is interrupted; code that stops within the grace ends the cell as a
// timeout at the limit, with the container (and its state) kept.
func TestTimeoutInterruptsAndKeepsTheContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{Grace: 2 * time.Second})
		defer s.Close()
		res, took, err := runAt(t, t.Context(), s, "stops", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusTimeout || !res.StateKept || res.Traceback != "KeyboardInterrupt" {
			t.Fatalf("result %+v", res)
		}
		if took != 10*time.Second || res.Duration != took {
			t.Fatalf("the cell ended after %s (its result says %s), want at its limit of 10s", took, res.Duration)
		}
		wantState(t, s, stateReady)
		if res, _, err := runAt(t, t.Context(), s, "ok", time.Minute); err != nil || res.Status != StatusOK || !res.StateKept {
			t.Fatalf("the next cell: %+v, %v", res, err)
		}
		wantCounts(t, eng, 1, 0)
	})
}

// TestGraceOverReplacesTheContainer: code that ignores the interrupt is
// given the grace and no more; then the container is removed, the cell
// ends as a timeout without its state, and the next cell starts a new
// container.
func TestGraceOverReplacesTheContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{Grace: 2 * time.Second})
		defer s.Close()
		res, took, err := runAt(t, t.Context(), s, "hangs", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusTimeout || res.StateKept || !strings.Contains(res.Notice, "did not stop within 2s of being interrupted") {
			t.Fatalf("result %+v", res)
		}
		if took != 12*time.Second {
			t.Fatalf("the cell ended after %s, want its limit and the grace (12s)", took)
		}
		wantState(t, s, stateEmpty)
		wantCounts(t, eng, 1, 1)
		if s.Python() != "" {
			t.Fatalf("Python() = %q with no container", s.Python())
		}
		if res, _, err := runAt(t, t.Context(), s, "ok", time.Minute); err != nil || res.Status != StatusOK {
			t.Fatalf("the next cell: %+v, %v", res, err)
		}
		wantCounts(t, eng, 2, 1)
	})
}

// TestCancelInterrupts: a caller that cancels interrupts the cell at
// once, as the time limit does, and the cell ends as cancelled.
func TestCancelInterrupts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{})
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		res, took, err := runAt(t, ctx, s, "stops", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusCancelled || !res.StateKept || took != 3*time.Second {
			t.Fatalf("after %s: %+v", took, res)
		}
		wantState(t, s, stateReady)
	})
}

// TestStartTimeout: a runtime that never says it is ready fails the
// start at the start timeout; the container is removed and the session
// is empty, so that the next cell tries again.
func TestStartTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{silent: true}
		s := fakeSession(eng, Config{StartTimeout: 30 * time.Second})
		defer s.Close()
		_, took, err := runAt(t, t.Context(), s, "ok", time.Minute)
		if err == nil || !strings.Contains(err.Error(), "waiting for the runtime: context deadline exceeded") || took != 30*time.Second {
			t.Fatalf("after %s: %v", took, err)
		}
		wantState(t, s, stateEmpty)
		wantCounts(t, eng, 1, 1)
	})
}

// TestStartTimeoutOfAnEngineThatHangs: the start timeout bounds the
// engine's own start too.
func TestStartTimeoutOfAnEngineThatHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{hold: make(chan struct{})}
		s := fakeSession(eng, Config{StartTimeout: 30 * time.Second})
		defer s.Close()
		_, took, err := runAt(t, t.Context(), s, "ok", time.Minute)
		if !errors.Is(err, context.DeadlineExceeded) || took != 30*time.Second {
			t.Fatalf("after %s: %v", took, err)
		}
		wantState(t, s, stateEmpty)
	})
}

// TestCrashReplacesTheContainer: a runtime that dies under a cell ends it
// as crashed, saying why, and the next cell gets a new container.
func TestCrashReplacesTheContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{})
		defer s.Close()
		res, _, err := runAt(t, t.Context(), s, "dies", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusCrashed || res.StateKept || !strings.Contains(res.Notice, "the sandbox died while the code ran: exited with code 1 (a fake container)") {
			t.Fatalf("result %+v", res)
		}
		wantState(t, s, stateEmpty)
		wantCounts(t, eng, 1, 1)
		if res, _, err := runAt(t, t.Context(), s, "ok", time.Minute); err != nil || res.Status != StatusOK {
			t.Fatalf("the next cell: %+v, %v", res, err)
		}
		wantCounts(t, eng, 2, 1)
	})
}

// TestCrashWhileIdleIsFoundByTheNextCell: nothing watches an idle
// container; the cell after its death ends as crashed and replaces it.
func TestCrashWhileIdleIsFoundByTheNextCell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{})
		defer s.Close()
		if _, _, err := runAt(t, t.Context(), s, "ok", time.Minute); err != nil {
			t.Fatal(err)
		}
		eng.kill(1)
		synctest.Wait()
		wantState(t, s, stateReady)
		res, _, err := runAt(t, t.Context(), s, "ok", time.Minute)
		if err != nil || res.Status != StatusCrashed || res.StateKept {
			t.Fatalf("the cell after the crash: %+v, %v", res, err)
		}
		wantState(t, s, stateEmpty)
	})
}

// TestFirstUsesShareOneStart: a Put and a Run that both find no container
// share one start (the second waits for the first); each used to start a
// container of its own, and the one started first was never removed.
func TestFirstUsesShareOneStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{hold: make(chan struct{})}
		s := fakeSession(eng, Config{})
		defer s.Close()
		put := make(chan error, 1)
		go func() { put <- s.Put(t.Context(), []protocol.File{{Path: "a.txt", Data: []byte("a")}}) }()
		ran := make(chan error, 1)
		go func() {
			res, err := s.Run(t.Context(), Request{Code: "ok", Timeout: time.Minute})
			if err == nil && res.Status != StatusOK {
				err = errors.New(res.Notice)
			}
			ran <- err
		}()
		synctest.Wait() // both wait: one for the engine, one for that start
		wantCounts(t, eng, 1, 0)
		close(eng.hold)
		if err := <-put; err != nil {
			t.Fatal(err)
		}
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		wantCounts(t, eng, 1, 0)
	})
}

// TestCloseCancelsAStart: Close during a start cancels it and returns once
// it ended; the cell that was waiting for it learns the session closed
// (it used to wait for the whole start timeout, and Close returned while
// the container was still being made).
func TestCloseCancelsAStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, eng := range []*fakeEngine{{hold: make(chan struct{})}, {silent: true}} {
			s := fakeSession(eng, Config{})
			ran := make(chan error, 1)
			go func() {
				_, _, err := runAt(t, t.Context(), s, "ok", time.Minute)
				ran <- err
			}()
			synctest.Wait() // in the engine's start, or greeting a silent runtime
			start := time.Now()
			_ = s.Close()
			if _, removed := eng.counts(); removed != eng.made() {
				t.Fatalf("Close returned with %d of %d containers removed", removed, eng.made())
			}
			if err := <-ran; !errors.Is(err, ErrClosed) || time.Since(start) != 0 {
				t.Fatalf("the cell: %v after %s, want ErrClosed at once", err, time.Since(start))
			}
			wantState(t, s, stateClosed)
		}
	})
}

// TestCloseDuringACell: Close removes the container under a running cell,
// which ends as crashed; later cells and Puts are refused.
func TestCloseDuringACell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{})
		type outcome struct {
			res *Result
			err error
		}
		ran := make(chan outcome, 1)
		go func() {
			res, _, err := runAt(t, t.Context(), s, "hangs", time.Minute)
			ran <- outcome{res, err}
		}()
		synctest.Wait()
		wantState(t, s, stateRunning)
		_ = s.Close()
		wantCounts(t, eng, 1, 1)
		o := <-ran
		if o.err != nil || o.res.Status != StatusCrashed || o.res.StateKept {
			t.Fatalf("the running cell: %+v, %v", o.res, o.err)
		}
		wantState(t, s, stateClosed)
		if _, _, err := runAt(t, t.Context(), s, "ok", time.Minute); !errors.Is(err, ErrClosed) {
			t.Fatalf("a cell after Close: %v", err)
		}
		if err := s.Put(t.Context(), nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("a Put after Close: %v", err)
		}
	})
}

// TestWarmPoolRetriesWithBackoff: a pool whose engine cannot start a
// sandbox tries again after 0.5s, 1s, 2s, ... and fills once it can.
func TestWarmPoolRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{failures: 3}
		cfg := Config{Channel: ChannelAttach, Log: fakeSession(eng, Config{}).log}
		m := &Manager{log: cfg.Log, connect: func(context.Context) (Engine, error) { return eng, nil }}
		ready := make(chan *live, 1)
		start := time.Now()
		p := m.newWarmPool(cfg, 1, nil, ready)
		defer p.Close()
		<-ready
		if took := time.Since(start); took != warmRetryMin+2*warmRetryMin+4*warmRetryMin {
			t.Fatalf("the pool filled after %s, want three waits of 0.5s, 1s and 2s", took)
		}
		wantCounts(t, eng, 4, 0)
	})
}

// TestFramesCannotFloodTheDebugLog: a runtime that sends a thousand frames
// the host ignores costs the host's log a bounded number of lines, even at
// debug level.
func TestFramesCannotFloodTheDebugLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		var logged strings.Builder
		s := fakeSession(eng, Config{})
		s.log = slog.New(slog.NewTextHandler(&lockedWriter{w: &logged}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		defer s.Close()
		res, _, err := runAt(t, t.Context(), s, "floods", time.Minute)
		if err != nil || res.Status != StatusOK {
			t.Fatalf("result %+v, %v", res, err)
		}
		s.Close()
		got := strings.Count(logged.String(), "ignoring a frame")
		if got != maxDebugLines || !strings.Contains(logged.String(), "the rest are dropped") {
			t.Fatalf("%d lines about ignored frames, want %d and a line that says the rest are dropped:\n%s", got, maxDebugLines, logged.String())
		}
	})
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
