package httpserve

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sessionLimit bounds the MCP sessions open at once: in all, and per
// principal (the name of the token a request carried). A request that
// opens a session first reserves a place, under a lock held only while
// counting; the place is kept while the request is served (no lock), and
// then belongs to the session it opened, if any.
type sessionLimit struct {
	total        int
	perPrincipal int // 0: no cap per principal
	// live yields the ids of the sessions open now.
	live func() iter.Seq[string]

	mu      sync.Mutex
	owners  map[string]string // session id -> principal, pruned to live
	pending map[string]int    // principal -> sessions being opened
	opening int               // sessions being opened, in all
}

// limitKind names the limit a refused session hit.
type limitKind int

const (
	limitTotal limitKind = iota + 1
	limitPrincipal
)

func newSessionLimit(total, perPrincipal int, live func() iter.Seq[string]) *sessionLimit {
	return &sessionLimit{total: total, perPrincipal: perPrincipal, live: live,
		owners: map[string]string{}, pending: map[string]int{}}
}

// reserve takes a place for a session principal opens, or reports the
// limit that leaves none. The place must be given back with done.
func (l *sessionLimit) reserve(principal string) (limitKind, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := map[string]bool{}
	for id := range l.live() {
		open[id] = true
	}
	mine := l.pending[principal]
	for id, p := range l.owners {
		switch {
		case !open[id]:
			delete(l.owners, id)
		case p == principal:
			mine++
		}
	}
	// Every session was opened through reserve: it is in owners, or its
	// request still holds a reservation.
	if n := len(l.owners) + l.opening; n >= l.total {
		return limitTotal, n
	}
	if l.perPrincipal > 0 && mine >= l.perPrincipal {
		return limitPrincipal, mine
	}
	l.pending[principal]++
	l.opening++
	return 0, 0
}

// done gives back principal's reservation; id, when not empty, is the
// session the request opened, which now counts in the reservation's place.
func (l *sessionLimit) done(principal, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != "" {
		l.owners[id] = principal
	}
	l.opening--
	if l.pending[principal]--; l.pending[principal] == 0 {
		delete(l.pending, principal)
	}
}

// limitSessions refuses a request that would open a session beyond a
// limit, with a 503 that names the limit. The request's body has been read
// already (readBody): nothing here waits on the network under the lock.
func (s *Server) limitSessions(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !opensSession(r) {
			h.ServeHTTP(w, r)
			return
		}
		who := userID(r)
		kind, n := s.limit.reserve(who)
		if kind != 0 {
			s.opts.Metrics.Refused()
			s.refuseSession(w, r, kind, who, n)
			return
		}
		defer func() { s.limit.done(who, w.Header().Get(sessionIDHeader)) }()
		h.ServeHTTP(w, r)
	})
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

// refuseSession answers a session refused by the limit of kind.
func (s *Server) refuseSession(w http.ResponseWriter, r *http.Request, kind limitKind, who string, n int) {
	ends := fmt.Sprintf("idle sessions end after %s", s.opts.IdleTimeout)
	if kind == limitPrincipal {
		s.log.Warn("refused a new session: its user has the most sessions one user may", "user", who, "sessions", n, "max_sessions_per_user", s.limit.perPrincipal)
		refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("codebridge serves at most %d sessions at once per user (--max-sessions-per-user), and %q has %d open: "+
			"end one of yours (%s), or ask the operator to raise --max-sessions-per-user", s.limit.perPrincipal, who, n, ends))
		return
	}
	s.log.Warn("refused a new session: the server is full", "sessions", n, "max_sessions", s.limit.total)
	refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("codebridge serves at most %d sessions at once (--max-sessions) and all are taken: "+
		"try again when one ends (%s), or ask the operator to raise --max-sessions", s.limit.total, ends))
}
