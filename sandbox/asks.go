package sandbox

import (
	"context"
	"errors"
	"sync"

	"github.com/codebridge/codebridge/internal/protocol"
)

// asks are the host's requests of the runtime (put, get) that wait for an
// answer frame (stored, got), by id. The reader goroutine delivers each
// answer without blocking; a second answer with the same id is dropped.
type asks[T any] struct {
	mu   sync.Mutex
	next int64
	wait map[int64]chan T
}

// ask sends the frame that frame builds for a new id, and waits for its answer,
// the end of the runtime, or ctx.
func ask[T any](ctx context.Context, c *live, a *asks[T], frame func(id int64) protocol.Frame, what string) (T, error) {
	a.mu.Lock()
	a.next++
	id := a.next
	if a.wait == nil {
		a.wait = map[int64]chan T{}
	}
	ch := make(chan T, 1)
	a.wait[id] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.wait, id)
		a.mu.Unlock()
	}()
	c.out.send(frame(id), 0, false, nil)
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-c.quit:
		return zero, errors.New("sandbox: the sandbox ended before " + what)
	case <-c.dead:
		return zero, errors.New("sandbox: the runtime stopped before " + what)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// answer hands v to the ask with id.
func (a *asks[T]) answer(id int64, v T) {
	a.mu.Lock()
	ch := a.wait[id]
	a.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- v:
	default:
	}
}
