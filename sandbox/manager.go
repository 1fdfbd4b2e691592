package sandbox

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// Manager connects to one container engine, on first need, and makes the
// sessions that run on it. Connecting also removes the containers that
// bridges killed earlier left behind. A failed connection is tried again on
// the next need. Sessions are cheap: many share the one connection.
type Manager struct {
	opts    EngineOptions
	log     *slog.Logger
	connect func(context.Context) (Engine, error)

	mu  sync.Mutex
	eng Engine

	notes channelNotes
}

// NewManager returns a manager for the engine opts describe; nothing
// connects until a session needs the engine (or [Manager.Warm]).
func NewManager(opts EngineOptions) *Manager {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	m := &Manager{opts: opts, log: opts.Log}
	m.connect = func(ctx context.Context) (Engine, error) { return Connect(ctx, m.opts) }
	return m
}

// NewSession returns a session on this manager's engine that reaches out
// through host (nil: it answers every request of the runtime with an
// error). No container starts until its first Run.
func (m *Manager) NewSession(cfg Config, host Host) *Session {
	cfg = cfg.withDefaults()
	if host == nil {
		host = noHost{}
	}
	return &Session{cfg: cfg, host: host, engine: m.Engine, log: cfg.Log, turn: make(chan struct{}, 1), notes: &m.notes,
		changed: make(chan struct{})}
}

// Engine returns the engine, connecting (and sweeping stale containers)
// the first time.
func (m *Manager) Engine(ctx context.Context) (Engine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.eng != nil {
		return m.eng, nil
	}
	start := time.Now()
	eng, err := m.connect(ctx)
	if err != nil {
		return nil, err
	}
	m.log.Debug("engine connected", "engine", eng.Name(), "took", time.Since(start).Round(time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if n, err := eng.RemoveStale(rctx); err != nil {
		m.log.Warn("removing stale containers", "err", err)
	} else if n > 0 {
		m.log.Info("removed containers left by earlier bridges", "count", n)
	}
	if n := engine.SweepTempDirs(engine.CurrentOwner()); n > 0 {
		m.log.Info("removed private directories left by earlier bridges", "count", n, "in", os.TempDir())
	}
	m.eng = eng
	return eng, nil
}

// Warm connects now, so that the first cell does not wait for it. Errors
// are left for that cell to report.
func (m *Manager) Warm() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.Engine(ctx); err != nil {
		m.log.Debug("engine not ready at start-up", "err", err)
	}
}

// Close releases the engine connection (and stops a Podman service the
// engine started). Close the sessions first: then it also removes the
// channel directories an engine made again after a failed start
// ([engine.SweepRemade]), since no sandbox of this bridge is left.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.eng == nil {
		return nil
	}
	err := m.eng.Close()
	m.eng = nil
	if n := engine.SweepRemade(engine.CurrentOwner()); n > 0 {
		m.log.Info("removed directories an engine made again in place of this bridge's own", "count", n, "in", os.TempDir())
	}
	return err
}
