package upstream

import (
	"sync"
	"sync/atomic"
)

// sessionList caches one list a server gave in one session (its tools, or
// its resources, templates and prompts) until the server says the list
// changed; a list read in another session is never returned. Its
// generation counts the changes, so that a list read while one happened
// is not kept.
type sessionList[T any] struct {
	mu   sync.Mutex
	list []T
	of   *conn // the session list was read in; nil when none is cached
	gen  atomic.Uint64
}

// cached returns the list read in session c, when one is cached, and the
// generation to give put with a list read now.
func (l *sessionList[T]) cached(c *conn) (list []T, gen uint64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.of != nil && l.of == c {
		return l.list, l.gen.Load(), true
	}
	return nil, l.gen.Load(), false
}

// put keeps list, read in session c, unless the list changed since
// generation gen (the list may be from before the change); it reports
// whether it kept it.
func (l *sessionList[T]) put(c *conn, gen uint64, list []T) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen.Load() != gen {
		return false
	}
	l.list, l.of = list, c
	return true
}

// changed forgets the list and counts a change.
func (l *sessionList[T]) changed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list, l.of = nil, nil
	l.gen.Add(1)
}

// moved counts a change and keeps the list: what a reader was given in
// its place (a saved listing) differs from it.
func (l *sessionList[T]) moved() { l.gen.Add(1) }

// forget forgets list when it is the one kept, without counting a change:
// a reader found it stale, and the next read fetches the list again.
func (l *sessionList[T]) forget(list []T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) == len(list) && (len(list) == 0 || &l.list[0] == &list[0]) {
		l.list, l.of = nil, nil
	}
}

// generation counts the changes to the list so far.
func (l *sessionList[T]) generation() uint64 { return l.gen.Load() }
