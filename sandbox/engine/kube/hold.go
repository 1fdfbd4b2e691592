//go:build kubernetes

package kube

import (
	"context"
	"sync"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// The engine holds session handles for the bridge ([engine.Holder]) with
// its Lease layer: one Lease per handle, held by a replica while a call
// on the handle runs there, released when the call ends and deleted when
// the handle ends. Leases whose Pod is gone are swept on the first hold
// and then at most every [leaseSweepEvery], in the background.

// leaseSweepEvery is how often, at most, holding a handle also sweeps the
// Leases whose Pod is gone.
const leaseSweepEvery = 5 * time.Minute

// handleHolds is the engine's part of [engine.Holder]: its Lease layer, and
// when it last swept.
type handleHolds struct {
	leases *Leases

	mu    sync.Mutex
	swept time.Time
}

var _ engine.Holder = (*kubeEngine)(nil)

// kubeHold is a handle's Lease held for a call.
type kubeHold struct {
	*Held
	moved bool
}

// Moved reports whether another replica held the Lease since this
// replica's last hold of it.
func (h *kubeHold) Moved() bool { return h.moved }

// Hold takes the Lease of the handle whose label digest is given, with
// one write when last is this replica's previous hold of it and nobody
// wrote the Lease since.
func (e *kubeEngine) Hold(ctx context.Context, digest string, last engine.Hold) (engine.Hold, error) {
	e.holds.sweepSoon(e)
	var prev *Held
	if k, ok := last.(*kubeHold); ok {
		prev = k.Held
	}
	h, moved, err := e.holds.leases.Retake(ctx, digest, prev)
	if err != nil {
		return nil, err
	}
	return &kubeHold{Held: h, moved: moved}, nil
}

// Drop deletes the Lease of the handle whose label digest is given: its
// handle ended.
func (e *kubeEngine) Drop(ctx context.Context, digest string) error {
	return e.holds.leases.Drop(ctx, digest)
}

// sweepSoon sweeps, in the background, the Leases whose Pod is gone,
// unless that was done less than [leaseSweepEvery] ago.
func (h *handleHolds) sweepSoon(e *kubeEngine) {
	h.mu.Lock()
	due := time.Since(h.swept) >= leaseSweepEvery
	if due {
		h.swept = time.Now()
	}
	h.mu.Unlock()
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n, err := h.leases.Sweep(ctx); err != nil {
			e.log.Warn("sweeping the Leases of ended handles", "err", err)
		} else if n > 0 {
			e.log.Info("removed the Leases of handles whose sandbox Pod is gone", "count", n)
		}
	}()
}
