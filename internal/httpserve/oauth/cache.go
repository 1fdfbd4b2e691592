package oauth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// digest is a token's SHA-256: caches are keyed by it, so no token is
// kept in memory past the request that carried it.
type digest = [sha256.Size]byte

// answerCache keeps answers by a token's digest, each until a time of
// its own, and at most max of them: putting one more evicts the oldest
// put. It is safe for concurrent use.
type answerCache[V any] struct {
	max int

	mu    sync.Mutex
	byKey map[digest]*list.Element // of *cacheEntry[V]
	order list.List                // of *cacheEntry[V], oldest put first
}

// cacheEntry is one answer, and until when it is kept.
type cacheEntry[V any] struct {
	key   digest
	val   V
	until time.Time
}

func newAnswerCache[V any](size int) *answerCache[V] {
	return &answerCache[V]{max: size, byKey: map[digest]*list.Element{}}
}

// get returns key's answer if it is kept and now is before its end; an
// answer past its end is dropped.
func (c *answerCache[V]) get(key digest, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.byKey[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cacheEntry[V])
	if !now.Before(e.until) {
		c.remove(el)
		return zero, false
	}
	return e.val, true
}

// put keeps val as key's answer until until, in place of any it had,
// evicting the oldest answers beyond max.
func (c *answerCache[V]) put(key digest, val V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.remove(el)
	}
	for c.order.Len() >= c.max {
		c.remove(c.order.Front())
	}
	c.byKey[key] = c.order.PushBack(&cacheEntry[V]{key: key, val: val, until: until})
}

// len is the number of answers kept (some may be past their end).
func (c *answerCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// remove drops an entry; c.mu is held.
func (c *answerCache[V]) remove(el *list.Element) {
	delete(c.byKey, el.Value.(*cacheEntry[V]).key)
	c.order.Remove(el)
}
