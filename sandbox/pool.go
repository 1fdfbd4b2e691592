package sandbox

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// WarmPool keeps a few sandboxes started, with the runtime loaded and
// greeted, so that a new session's first cell does not wait for a
// container to be created and Python to start. A session made by the pool
// takes a ready sandbox when it first needs one (and after a restart), and
// the pool starts another in the background. When the pool is empty the
// session starts its own, as any session does.
//
// The pooled runtimes are greeted with the servers given to
// [Manager.NewWarmPool]; the session's own [Host.StartFiles] are written
// into the sandbox as it is taken.
type WarmPool struct {
	m     *Manager
	tmpl  *Session      // starts the pooled sandboxes
	ready chan *live    // started and greeted, waiting for a session
	slots chan struct{} // one token per sandbox the pool may start
	stop  context.CancelFunc
	done  chan struct{}
	log   *slog.Logger

	hits, misses atomic.Int64
	onReady      chan *live // tests: told of each sandbox that became ready
}

// warmRetry bounds the wait between attempts when the pool cannot start a
// sandbox (no engine, no image); it doubles from warmRetryMin.
const (
	warmRetryMin = 500 * time.Millisecond
	warmRetryMax = 30 * time.Second
)

// NewWarmPool starts keeping n sandboxes made with cfg ready; their
// runtimes are told about servers. Close the pool before the manager.
func (m *Manager) NewWarmPool(cfg Config, n int, servers []protocol.ServerInfo) *WarmPool {
	return m.newWarmPool(cfg, n, servers, nil)
}

func (m *Manager) newWarmPool(cfg Config, n int, servers []protocol.ServerInfo, onReady chan *live) *WarmPool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &WarmPool{
		m:     m,
		tmpl:  m.NewSession(cfg, poolHost{servers: servers}),
		ready: make(chan *live, n),
		slots: make(chan struct{}, n),
		stop:  cancel,
		done:  make(chan struct{}),

		onReady: onReady,
	}
	p.log = p.tmpl.log
	for range n {
		p.slots <- struct{}{}
	}
	go p.fill(ctx)
	return p
}

// NewSession returns a session like [Manager.NewSession] that takes its
// sandboxes from the pool when one is ready.
func (p *WarmPool) NewSession(host Host) *Session {
	s := p.m.NewSession(p.tmpl.cfg, host)
	s.warm = p
	return s
}

// Ready is how many sandboxes wait for a session now.
func (p *WarmPool) Ready() int { return len(p.ready) }

// Taken counts the sessions that found a ready sandbox (hits) and those
// that had to start their own (misses).
func (p *WarmPool) Taken() (hits, misses int64) { return p.hits.Load(), p.misses.Load() }

// fill starts a sandbox whenever a slot is free, until ctx ends.
func (p *WarmPool) fill(ctx context.Context) {
	defer close(p.done)
	wait := warmRetryMin
	for {
		select {
		case <-p.slots:
		case <-ctx.Done():
			return
		}
		c, err := p.tmpl.start(ctx)
		if err != nil {
			p.slots <- struct{}{}
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("the warm pool could not start a sandbox; trying again", "err", err, "in", wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, warmRetryMax)
			continue
		}
		wait = warmRetryMin
		p.ready <- c // never blocks: a slot was free
		if p.onReady != nil {
			p.onReady <- c
		}
	}
}

// take returns a ready sandbox that is still alive, or nil.
func (p *WarmPool) take() *live {
	for {
		select {
		case c := <-p.ready:
			p.slots <- struct{}{}
			if c.idle() {
				p.hits.Add(1)
				return c
			}
			go c.discard(p.log)
		default:
			p.misses.Add(1)
			return nil
		}
	}
}

// idle reports whether a greeted runtime is still there and has said
// nothing since it was ready (it speaks only when asked).
func (c *live) idle() bool {
	select {
	case <-c.frames:
		return false
	default:
		return true
	}
}

// Close stops filling the pool and removes the sandboxes in it.
func (p *WarmPool) Close() {
	p.stop()
	<-p.done
	var wg sync.WaitGroup
	for len(p.ready) > 0 {
		c := <-p.ready
		wg.Go(func() { c.discard(p.log) })
	}
	wg.Wait()
}

// acquire returns a new live sandbox for s: a ready one from its pool,
// with the host's start files written into it, else one started now.
func (s *Session) acquire(ctx context.Context) (*live, error) {
	if s.warm != nil && s.cfg.Detachable == nil { // the pool's containers carry no handle
		if c := s.warm.take(); c != nil {
			files := s.host.StartFiles()
			if len(files) == 0 {
				return c, nil
			}
			if err := c.put(ctx, files); err == nil {
				return c, nil
			}
			go c.discard(s.log)
		}
	}
	return s.start(ctx)
}

// poolHost greets the pool's runtimes; they answer no requests until a
// session takes them.
type poolHost struct {
	noHost
	servers []protocol.ServerInfo
}

func (h poolHost) Servers() []protocol.ServerInfo { return h.servers }
