package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/codebridge/codebridge/sandbox"
)

// engineProvider connects to the container engine once, on first need, and
// removes containers left by bridges that were killed. A failed connection
// is tried again on the next need.
type engineProvider struct {
	kind string
	log  *slog.Logger

	mu  sync.Mutex
	eng sandbox.Engine
}

func newEngineProvider(kind string, log *slog.Logger) *engineProvider {
	return &engineProvider{kind: kind, log: log}
}

func (p *engineProvider) get(ctx context.Context) (sandbox.Engine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eng != nil {
		return p.eng, nil
	}
	start := time.Now()
	eng, err := sandbox.Connect(ctx, sandbox.EngineOptions{Kind: p.kind, Log: p.log})
	if err != nil {
		return nil, err
	}
	p.log.Debug("engine connected", "engine", eng.Name(), "took", time.Since(start).Round(time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if n, err := eng.RemoveStale(rctx); err != nil {
		p.log.Warn("removing stale containers", "err", err)
	} else if n > 0 {
		p.log.Info("removed containers left by earlier bridges", "count", n)
	}
	p.eng = eng
	return eng, nil
}

// warm connects in the background at start-up, so the first call does not
// wait for it. Errors are left for that call to report.
func (p *engineProvider) warm() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.get(ctx); err != nil {
		p.log.Debug("engine not ready at start-up", "err", err)
	}
}

func (p *engineProvider) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eng != nil {
		_ = p.eng.Close()
		p.eng = nil
	}
}
