package httpserve

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sessionLimit bounds the MCP sessions open at once: in all, and per
// principal (the name of the token a request carried). A request that
// opens a session first reserves a place, under a lock held only while
// counting; the place is kept while the request is served (no lock), and
// belongs to the session it opened, if any, from the moment the answer's
// header (which names the session) is written.
//
// When a principal's new session finds no place (its own limit, or the
// total), its least recently used session that is idle (no request of it
// is being served, so no open stream, and no cell of it runs) is ended
// to make room; only when every one of its sessions is busy is the new
// one refused. Another principal's session is never ended.
type sessionLimit struct {
	total        int
	perPrincipal int // 0: no cap per principal
	// open yields the id of each session open now, and whether a cell of
	// it runs (which the bridge knows).
	open func() iter.Seq2[string, bool]
	// handles yields the tag of each session handle live now (the
	// stateless protocol's sessions, which the bridge keeps), its
	// principal and whether a cell of it runs; nil yields none. A handle
	// counts like a session, from the moment it is live.
	handles func() iter.Seq2[string, openHandle]

	mu      sync.Mutex
	owned   map[string]*ownedSession // by session id, pruned to open
	active  map[activeKey]int        // requests being served, by session and principal
	pending map[string]int           // principal -> sessions being opened
	opening int                      // sessions being opened, in all
	uses    uint64                   // counts uses: the least recently used session has the smallest lastUse
}

// openHandle is a live session handle as the limit sees it.
type openHandle struct {
	principal string
	running   bool
}

// ownedSession is what the limit knows of an open session.
type ownedSession struct {
	principal    string
	opened, used time.Time
	lastUse      uint64
	// ending is set once the session is chosen to make room: it counts no
	// more, and its principal's requests for it are answered as for a
	// session that ended.
	ending bool
}

// activeKey names the requests of one principal for one session.
type activeKey struct{ id, principal string }

// limitKind names the limit a new session hit.
type limitKind int

const (
	limitTotal limitKind = iota + 1
	limitPrincipal
)

// flag is the setting that sets the limit.
func (k limitKind) flag() string {
	if k == limitPrincipal {
		return "--max-sessions-per-user"
	}
	return "--max-sessions"
}

func newSessionLimit(total, perPrincipal int, open func() iter.Seq2[string, bool], handles func() iter.Seq2[string, openHandle]) *sessionLimit {
	return &sessionLimit{total: total, perPrincipal: perPrincipal, open: open, handles: handles,
		owned: map[string]*ownedSession{}, active: map[activeKey]int{}, pending: map[string]int{}}
}

// admission is reserve's answer: a place, or the limit that leaves none.
type admission struct {
	place *reservation // nil: refused
	// hit is the limit that was full, if any: with a place, the one an
	// idle session of the principal was ended for; without, the one that
	// refused the session, n being the sessions counted against it.
	hit limitKind
	n   int
	// ended is the session ended to make room, or nil.
	ended *endedSession
}

// endedSession is the session ended to make room for another.
type endedSession struct {
	id           string
	opened, used time.Time
}

// reserve takes a place for a session principal opens, making room by
// ending principal's least recently used idle session if it must, or
// reports the limit that leaves none. The caller ends the session named
// in the answer, and settles the place with its open or release.
func (l *sessionLimit) reserve(principal string) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := l.prune()
	kind, n := l.full(principal)
	var ended *endedSession
	if kind != 0 {
		id := l.leastRecentlyUsedIdle(principal, running)
		if id == "" {
			return admission{hit: kind, n: n}
		}
		o := l.owned[id]
		o.ending = true
		ended = &endedSession{id: id, opened: o.opened, used: o.used}
	}
	l.pending[principal]++
	l.opening++
	return admission{place: &reservation{l: l, principal: principal}, hit: kind, ended: ended}
}

// prune forgets the sessions that are no longer open, and returns
// whether a cell of each open one runs.
func (l *sessionLimit) prune() map[string]bool {
	running := map[string]bool{}
	for id, r := range l.open() {
		running[id] = r
	}
	if l.handles != nil {
		for tag, h := range l.handles() {
			running[tag] = h.running
			if l.owned[tag] == nil {
				now := time.Now()
				l.uses++
				l.owned[tag] = &ownedSession{principal: h.principal, opened: now, used: now, lastUse: l.uses}
			}
		}
	}
	for id := range l.owned {
		if _, ok := running[id]; !ok {
			delete(l.owned, id)
		}
	}
	return running
}

// full reports the limit a new session of principal would go beyond, and
// the sessions counted against it; 0 when there is a place. Every session
// was opened through reserve: it is owned, or its request still holds a
// reservation.
func (l *sessionLimit) full(principal string) (limitKind, int) {
	n, mine := l.opening, l.pending[principal]
	for _, o := range l.owned {
		if o.ending {
			continue
		}
		n++
		if o.principal == principal {
			mine++
		}
	}
	// Both full: the principal's own limit is the one to name, for
	// raising the total would not serve it.
	if l.perPrincipal > 0 && mine >= l.perPrincipal {
		return limitPrincipal, mine
	}
	if n >= l.total {
		return limitTotal, n
	}
	return 0, 0
}

// leastRecentlyUsedIdle is the id of principal's session used least
// recently of those that are idle: no request of principal for it is
// being served (an open stream is one) and no cell of it runs. "" when
// every one is busy.
func (l *sessionLimit) leastRecentlyUsedIdle(principal string, running map[string]bool) string {
	var best *ownedSession
	id := ""
	for sid, o := range l.owned {
		if o.principal != principal || o.ending || running[sid] || l.active[activeKey{sid, principal}] > 0 {
			continue
		}
		if best == nil || o.lastUse < best.lastUse {
			best, id = o, sid
		}
	}
	return id
}

// use records a request of principal for session id, served until done
// is called. ok is false when the session is principal's and is being
// ended to make room: the request is then answered as for a session that
// ended.
func (l *sessionLimit) use(principal, id string) (done func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.owned[id]; o != nil && o.ending && o.principal == principal {
		return nil, false
	}
	k := activeKey{id, principal}
	l.active[k]++
	l.touch(k)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.active[k]--; l.active[k] == 0 {
			delete(l.active, k)
		}
		l.touch(k)
	}, true
}

// touch records a use of session k.id by its owner.
func (l *sessionLimit) touch(k activeKey) {
	if o := l.owned[k.id]; o != nil && o.principal == k.principal {
		l.uses++
		o.lastUse, o.used = l.uses, time.Now()
	}
}

// reservation is a place reserve took: it becomes the session the request
// opened (open), or is given back (release), once.
type reservation struct {
	l         *sessionLimit
	principal string
	settled   bool // guarded by l.mu
}

// open makes id, the session the request opened, count in the place.
func (r *reservation) open(id string) { r.settle(id) }

// release gives the place back, if no session took it.
func (r *reservation) release() { r.settle("") }

func (r *reservation) settle(id string) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.settled {
		return
	}
	r.settled = true
	if id != "" {
		now := time.Now()
		l.uses++
		l.owned[id] = &ownedSession{principal: r.principal, opened: now, used: now, lastUse: l.uses}
	}
	l.opening--
	if l.pending[r.principal]--; l.pending[r.principal] == 0 {
		delete(l.pending, r.principal)
	}
}

// limitSessions keeps the session limits: it refuses a request that would
// open a session beyond a limit, with a 503 that names the limit, unless
// an idle session of the same user can be ended to make room; and it
// records the requests each session has in flight (which make it busy).
// The request's body has been read already (readBody): nothing here waits
// on the network under the lock.
func (s *Server) limitSessions(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := userID(r)
		switch {
		case speaksStateless(r):
			s.serveStateless(w, r, h, who)
		case r.Header.Get(sessionIDHeader) != "":
			s.serveSession(w, r, h, who, r.Header.Get(sessionIDHeader))
		case opensSession(r):
			s.openSession(w, r, h, who)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// serveSession serves a request of who for session id, which is busy
// while it is served.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request, h http.Handler, who, id string) {
	done, ok := s.limit.use(who, id)
	if !ok {
		// As the go-sdk answers for a session that ended: a client then
		// opens a new one.
		http.Error(w, "session not found: codebridge ended it to make room for a newer session of the same user (it was the least recently used idle one); open a new session", http.StatusNotFound)
		return
	}
	defer done()
	h.ServeHTTP(w, r)
}

// openSession serves a request of who that may open a session, if the
// limits leave a place, or make one.
func (s *Server) openSession(w http.ResponseWriter, r *http.Request, h http.Handler, who string) {
	a := s.limit.reserve(who)
	if a.place == nil {
		s.opts.Metrics.Refused()
		s.refuseSession(w, r, a.hit, who, a.n)
		return
	}
	defer a.place.release()
	note := ""
	if a.ended != nil {
		note = s.endToMakeRoom(who, a.hit, a.ended)
	}
	h.ServeHTTP(&openingWriter{ResponseWriter: w, opened: func() {
		id := w.Header().Get(sessionIDHeader)
		a.place.open(id)
		if ss := s.session(id); ss != nil && note != "" {
			s.b.NoteNextRun(ss, note)
		}
	}}, r)
}

// openingWriter calls opened once, as the answer's header is written: the
// go-sdk has set the id of the session the request opened by then, and
// the client cannot have it yet.
type openingWriter struct {
	http.ResponseWriter
	opened func()
	once   sync.Once
}

func (w *openingWriter) WriteHeader(code int) {
	w.once.Do(w.opened)
	w.ResponseWriter.WriteHeader(code)
}

func (w *openingWriter) Write(p []byte) (int, error) {
	w.once.Do(w.opened)
	return w.ResponseWriter.Write(p)
}

// FlushError flushes the answer (http.ResponseController finds it).
func (w *openingWriter) FlushError() error {
	w.once.Do(w.opened)
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer beneath.
func (w *openingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// endToMakeRoom ends the session e of who, as the idle timeout ends one
// (the bridge then removes its sandbox), says so in the log, and returns
// the note that begins the new session's first run_python answer. hit is
// the limit that was full.
func (s *Server) endToMakeRoom(who string, hit limitKind, e *endedSession) string {
	age, idle := time.Since(e.opened).Round(time.Second), time.Since(e.used).Round(time.Second)
	full := fmt.Sprintf("the server had all the %d sessions it serves at once open (--max-sessions)", s.limit.total)
	if hit == limitPrincipal {
		full = fmt.Sprintf("you had the %d sessions one user may have open at once (--max-sessions-per-user)", s.limit.perPrincipal)
	}
	s.log.Info("ended a user's least recently used idle session to make room for a new one", "user", who,
		"session_age", age, "idle", idle, "limit", hit.flag())
	if ss := s.session(e.id); ss != nil {
		go ss.Close() // as the idle timeout does; Close waits for nothing of an idle session, but never blocks this request
	} else {
		s.b.EndSession(e.id, who, true) // a session handle: its next use says why it ended; its sandbox goes in the background
	}
	return fmt.Sprintf("[codebridge ended an older session of yours to make room for this one: %s, "+
		"and that one, opened %s ago, had been idle for %s (no cell running, no open stream); its variables and files are gone. "+
		"A client that ends its session when it is done (an HTTP DELETE) leaves the room free]\n", full, age, idle)
}

// opensSession reports whether r may open a session: a POST without a
// session id, unless its body is one JSON-RPC message (decoded by the
// go-sdk's own decoder) that is not initialize. The go-sdk makes a session
// for every such POST, but closes it with the request unless it was
// initialized; a request that cannot open a lasting session (the client's
// server/discover probe) takes no place, for its place would be given
// back only after the client had its answer and asked to initialize.
func opensSession(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) != "" {
		return false
	}
	if r.GetBody == nil {
		return true
	}
	rc, err := r.GetBody()
	if err != nil {
		return true
	}
	body, _ := io.ReadAll(rc)
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return true // a batch, or not JSON: counted
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return true
	}
	req, ok := msg.(*jsonrpc.Request)
	return !ok || req.Method == methodInitialize
}

// methodInitialize is the request that opens an MCP session.
const methodInitialize = "initialize"

// refuseSession answers a session refused by the limit of kind: every
// session of who that counted against it is busy, or (the total) is
// another user's.
func (s *Server) refuseSession(w http.ResponseWriter, r *http.Request, kind limitKind, who string, n int) {
	if kind == limitPrincipal {
		s.log.Warn("refused a new session: its user has the most sessions one user may, each busy", "user", who, "sessions", n, "max_sessions_per_user", s.limit.perPrincipal)
		refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("codebridge serves at most %d sessions at once per user (--max-sessions-per-user), and %q has %d open, "+
			"each running a cell or holding an open stream (an idle one would have been ended to make room): "+
			"wait for a cell to finish, end a session you no longer use, or ask the operator to raise --max-sessions-per-user", s.limit.perPrincipal, who, n))
		return
	}
	s.log.Warn("refused a new session: the server is full, and none of its sessions is an idle one of the same user", "user", who, "sessions", n, "max_sessions", s.limit.total)
	refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("codebridge serves at most %d sessions at once (--max-sessions) and all are taken, "+
		"by other users or by sessions of yours that run a cell or hold an open stream: "+
		"try again when one ends (idle sessions end after %s), or ask the operator to raise --max-sessions", s.limit.total, s.opts.IdleTimeout))
}
