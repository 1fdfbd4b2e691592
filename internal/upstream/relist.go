package upstream

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRelisting bounds how many servers of a pool (and its sessions'
// views) are listed in the background at once, for searches and after
// list_changed notifications: each can be a process starting.
const maxRelisting = 16

// listing is one background listing of a server: its tools, then its
// resources, templates and prompts. Its fields are set when done closes.
type listing struct {
	done   chan struct{}
	tools  []*mcp.Tool
	offers []Entry
	err    error
}

// relister lists a server in the background, one listing at a time:
// what asks while one is in progress gets that one, and a change the
// server announces meanwhile makes one more after it. What is listed is
// kept (toolCatalogue, offerCache) and saved (savedListing) as it is
// read, so the listing's outcome matters only to a search waiting for it.
type relister struct {
	slots chan struct{} // the pool's: one for each listing in progress
	list  func(context.Context) ([]*mcp.Tool, []Entry, error)
	bg    context.Context // ends when the server stops
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu     sync.Mutex
	cur    *listing // in progress; nil: none
	again  bool     // list once more after cur: the server changed a list meanwhile
	closed bool
}

// newRelister lists with list, taking one of slots for each listing.
func newRelister(slots chan struct{}, list func(context.Context) ([]*mcp.Tool, []Entry, error)) *relister {
	bg, stop := context.WithCancel(context.Background())
	return &relister{slots: slots, list: list, bg: bg, stop: stop}
}

// start returns the listing in progress, or starts one.
func (r *relister) start() *listing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startLocked()
}

// changed lists the server again because it said a list changed: now, or
// after the listing in progress, which may have read the list before.
func (r *relister) changed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.again = true
		return
	}
	r.startLocked()
}

// startLocked is start; r.mu is held.
func (r *relister) startLocked() *listing {
	if r.cur != nil {
		return r.cur
	}
	l := &listing{done: make(chan struct{})}
	if r.closed {
		l.err = errors.New("the bridge is shutting down")
		close(l.done)
		return l
	}
	r.cur = l
	r.wg.Add(1)
	go r.run(l)
	return l
}

// run does listing l when a slot is free, then the one more a change
// asked for.
func (r *relister) run(l *listing) {
	defer r.wg.Done()
	select {
	case r.slots <- struct{}{}:
		l.tools, l.offers, l.err = r.list(r.bg)
		<-r.slots
	case <-r.bg.Done():
		l.err = errors.New("the bridge is shutting down")
	}
	close(l.done)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = nil
	if r.again {
		r.again = false
		r.startLocked()
	}
}

// close ends the listing in progress and waits for it; none starts after.
func (r *relister) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stop()
	r.wg.Wait()
}
