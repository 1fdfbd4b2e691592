package bridge

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session handles (MCP 2026-07-28, SEP-2567): a client on the stateless
// protocol has no MCP session for codebridge to keep a sandbox in, so a
// sandbox session is a handle the model passes back as run_python's
// `session` argument. A handle is 128 random bits, bound to the principal
// that made it and checked on every use; the bridge keeps only its
// SHA-256 digest, so a log line, a listing or a memory dump of the
// registry never shows a usable handle. It lives until ended (by the
// sandbox, the CLI or the bridge's end) or idle past [Options.SessionIdle];
// then its sandbox is removed.

// DefaultSessionIdle is how long a session with no request lives: an HTTP
// MCP session (the go-sdk's session timeout) and a handle alike.
const DefaultSessionIdle = 30 * time.Minute

// handlePrefix begins every handle, so that a reader (and a secret
// scanner) can tell one.
const handlePrefix = "cbs_"

// handleBytes is the entropy of a handle: 128 bits.
const handleBytes = 16

// goneKept bounds the handles remembered after they ended, so that a
// late use of one says why it is gone; older ones read as unknown.
const goneKept = 4096

var handleText = base32.StdEncoding.WithPadding(base32.NoPadding)

// Handle errors: what a use of a handle that leads to no session gets.
// Another principal's handle is unknown, word for word: the answer tells
// nobody that a handle exists.
var (
	errUnknownHandle = errors.New("codebridge knows no session with this handle for you: check that `session` is exactly the handle an earlier answer gave, or omit `session` (a client on MCP 2026-07-28 over HTTP then gets a new session, its handle in the answer)")
	errEndedHandle   = errors.New("this session was ended (runtime.end_session, or the bridge that served it stopped), and its sandbox, variables and files are gone: omit `session` to start a new one")
)

// expiredError is the use of a handle whose session was idle past the
// limit, or ended to make room for a newer session of the same user.
type expiredError struct {
	idle    time.Duration
	evicted bool
}

func (e *expiredError) Error() string {
	if e.evicted {
		return "this session was ended to make room for a newer session of yours (you had as many open as one user may, and it was the least recently used idle one); its sandbox, variables and files are gone: omit `session` to start a new one, and end sessions you no longer need with runtime.end_session"
	}
	return fmt.Sprintf("this session expired: it had no call for %s (the idle limit, --idle-timeout) and its sandbox, variables and files were removed; omit `session` to start a new one", e.idle)
}

// goneWhy is why a handle's session ended.
type goneWhy int

const (
	goneEnded goneWhy = iota + 1
	goneExpired
	goneEvicted
)

// handleEntry is one live handle's session.
type handleEntry struct {
	digest    string
	principal principal.Principal
	sess      *session
	made      time.Time
	used      time.Time
	timer     *time.Timer // ends the session once idle past the limit
}

// goneEntry is what is kept of a handle after its session ended.
type goneEntry struct {
	principal principal.Principal
	why       goneWhy
}

// handles are the bridge's live session handles, by digest.
type handles struct {
	idle time.Duration
	// end is called, under the lock, as a session ends; what it returns
	// removes the session's sandbox, and runs without the lock.
	end func(*session) (remove func())

	// adopting is held while a call adopts a sandbox another bridge
	// left (handoff.go).
	adopting sync.Mutex

	mu     sync.Mutex
	closed bool
	live   map[string]*handleEntry
	gone   map[string]goneEntry
	order  []string // digests in gone, oldest first
}

func newHandles(idle time.Duration, end func(*session) func()) *handles {
	return &handles{idle: idle, end: end, live: map[string]*handleEntry{}, gone: map[string]goneEntry{}}
}

// handleDigest is the digest a handle is kept under.
func handleDigest(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return hex.EncodeToString(sum[:])
}

// HandleTag is the tag of a handle's session: a prefix of its digest,
// which logs and listings show and the HTTP front counts sessions by. It
// is no handle, and no handle can be made from it.
func HandleTag(handle string) string { return tagOf(handleDigest(handle)) }

func tagOf(digest string) string { return sandbox.TagOf(digest) }

// newHandle makes a handle: 128 random bits.
func newHandle() (string, error) {
	var b [handleBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a session handle: %w", err)
	}
	return handlePrefix + strings.ToLower(handleText.EncodeToString(b[:])), nil
}

// add registers handle as naming s, a session of p (new, or adopted from
// another bridge), and starts its idle clock.
func (h *handles) add(handle string, p principal.Principal, s *session) error {
	e := &handleEntry{digest: handleDigest(handle), principal: p, sess: s, made: time.Now()}
	e.used = e.made
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosing
	}
	if h.live[e.digest] != nil {
		return errUnknownHandle // a handle is registered once; another call adopted it first
	}
	h.live[e.digest] = e
	e.timer = time.AfterFunc(h.idle, func() { h.expire(e) })
	return nil
}

// goneFor reports whether handle's session ended on this bridge (for p):
// such a handle is never adopted, its error says why.
func (h *handles) goneFor(handle string, p principal.Principal) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.gone[handleDigest(handle)]
	return ok && g.principal == p
}

// mint makes a handle for s, a new session of p, and starts its idle
// clock.
func (h *handles) mint(p principal.Principal, s *session) (string, error) {
	handle, err := newHandle()
	if err != nil {
		return "", err
	}
	return handle, h.add(handle, p, s)
}

// errClosing refuses a new handle once the bridge is closing.
var errClosing = errors.New("codebridge is shutting down: start a new session when it is back")

// open is the session of handle for p, its idle clock restarted; an
// unknown handle (another principal's too), an ended and an expired one
// each get their own error.
func (h *handles) open(handle string, p principal.Principal) (*session, error) {
	if !strings.HasPrefix(handle, handlePrefix) {
		return nil, errUnknownHandle
	}
	d := handleDigest(handle)
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.live[d]; e != nil && e.principal == p {
		e.used = time.Now()
		e.timer.Reset(h.idle)
		return e.sess, nil
	}
	g, ok := h.gone[d]
	if !ok || g.principal != p {
		return nil, errUnknownHandle
	}
	switch g.why {
	case goneExpired:
		return nil, &expiredError{idle: h.idle}
	case goneEvicted:
		return nil, &expiredError{evicted: true}
	}
	return nil, errEndedHandle
}

// touch restarts the idle clock of s's handle, as a call of it ends: a
// session is idle from the end of its last call, not its start.
func (h *handles) touch(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.live {
		if e.sess == s {
			e.used = time.Now()
			e.timer.Reset(h.idle)
			return
		}
	}
}

// release forgets s's handle on this bridge without ending it or
// remembering it as gone, and reports whether s had one: the next call
// with the handle adopts its sandbox again.
func (h *handles) release(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for d, e := range h.live {
		if e.sess == s {
			e.timer.Stop()
			delete(h.live, d)
			return true
		}
	}
	return false
}

// expire ends e's session once it was idle past the limit; a session
// whose cell runs (a long cell, or one waiting for the client's answers)
// is not idle, and its clock starts again.
func (h *handles) expire(e *handleEntry) {
	h.mu.Lock()
	if h.live[e.digest] != e {
		h.mu.Unlock()
		return
	}
	if e.sess.cells.Load() > 0 || time.Since(e.used) < h.idle {
		e.timer.Reset(h.idle)
		h.mu.Unlock()
		return
	}
	remove := h.forget(e, goneExpired)
	h.mu.Unlock()
	remove()
}

// endTag ends the session of p tagged tag (or whose handle tag is), for
// why, and returns what removes its sandbox; ok is false when p had no
// such session. From then on the handle reads as ended.
func (h *handles) endTag(tag string, p principal.Principal, why goneWhy) (remove func(), ok bool) {
	tag = tagOfName(tag)
	h.mu.Lock()
	var found *handleEntry
	for _, e := range h.live {
		if e.principal == p && tagOf(e.digest) == tag {
			found = e
			break
		}
	}
	defer h.mu.Unlock()
	if found == nil {
		return nil, false
	}
	return h.forget(found, why), true
}

// forget moves e from the live handles to the gone ones, and returns what
// removes its session's sandbox; h.mu is held.
func (h *handles) forget(e *handleEntry, why goneWhy) (remove func()) {
	e.timer.Stop()
	delete(h.live, e.digest)
	h.gone[e.digest] = goneEntry{principal: e.principal, why: why}
	h.order = append(h.order, e.digest)
	if len(h.order) > goneKept {
		delete(h.gone, h.order[0])
		h.order = h.order[1:]
	}
	return h.end(e.sess)
}

// count is how many handles are live.
func (h *handles) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.live)
}

// SessionInfo describes one session in a listing: never its handle.
type SessionInfo struct {
	Tag       string        `json:"tag"`
	Principal string        `json:"-"` // the go-sdk's user id of its principal
	Age       time.Duration `json:"-"`
	Idle      time.Duration `json:"-"`
	Running   bool          `json:"running"`
	// AgeSeconds and IdleSeconds are Age and Idle as the sandbox reads them.
	AgeSeconds  int64 `json:"age_seconds"`
	IdleSeconds int64 `json:"idle_seconds"`
}

// list describes the live sessions of p, or of every principal when all
// is set, oldest first.
func (h *handles) list(p principal.Principal, all bool) []SessionInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	var out []SessionInfo
	for _, e := range h.live {
		if !all && e.principal != p {
			continue
		}
		i := SessionInfo{Tag: tagOf(e.digest), Principal: e.principal.UserID(), Age: now.Sub(e.made), Idle: now.Sub(e.used), Running: e.sess.cells.Load() > 0}
		i.AgeSeconds, i.IdleSeconds = int64(i.Age/time.Second), int64(i.Idle/time.Second)
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(b.Age, a.Age) })
	return out
}

// closeAll ends every handle (the bridge closes) and returns their
// sessions, for the caller to close at once; later mints are refused.
func (h *handles) closeAll() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	var out []*session
	for _, e := range h.live {
		out = append(out, e.sess)
		e.timer.Stop()
		delete(h.live, e.digest)
	}
	return out
}

// callingClient is the client whose call runs in a handle's session now:
// what the handle's own (per_session) servers ask of their client goes
// to it, and nowhere between calls (a client on the stateless protocol
// takes no request outside a call).
type callingClient struct {
	mu sync.Mutex
	ss *mcp.ServerSession
}

func (c *callingClient) get() *mcp.ServerSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ss
}

// set makes ss the calling client until the returned unset is called.
func (c *callingClient) set(ss *mcp.ServerSession) (unset func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ss = ss
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.ss == ss {
			c.ss = nil
		}
	}
}

// stateless reports whether ss is the session the go-sdk made for one
// request of a client on the stateless protocol (2026-07-28 over HTTP):
// it has no id, and ends with the request.
func (b *Bridge) stateless(ss *mcp.ServerSession) bool {
	return b.reg.mode == ManyUsers && ss != nil && ss.ID() == ""
}

// errStatelessResource refuses a read of a shared file by a client on the
// stateless protocol: a resource read names no session, and a session's
// files are its own.
var errStatelessResource = errors.New("on MCP protocol 2026-07-28 a resource read names no session, so codebridge cannot tell whose shared file this is: read the file from run_python (with your session's handle) and print or return its content")

// pickSession is the session a run_python call runs in: the one its
// `session` handle names, when it gives one and the handle is its
// principal's; else its current one (stdio's single session, a stateful
// HTTP client's MCP session's); else, on the stateless protocol, a new
// one, whose handle is returned too.
func (b *Bridge) pickSession(ctx context.Context, req *mcp.CallToolRequest, handle string) (*session, string, error) {
	p := principalOf(req.Extra)
	if handle != "" {
		s, err := b.openHandle(ctx, handle, p)
		if err != nil {
			b.log.Debug("refused a session handle", "principal", p.String(), "why", err)
		}
		return s, "", err
	}
	if b.stateless(req.Session) {
		return b.newHandleSession(ctx, p)
	}
	s, err := b.sessionOf(req.Session, req.Extra)
	return s, "", err
}

// enter makes the call of ss the one that runs in s: with a handle's
// session, what s's own servers ask goes to ss, and ss's gate session is
// s's, until the returned leave is called.
func (b *Bridge) enter(s *session, ss *mcp.ServerSession) (leave func()) {
	if s.calling == nil || ss == nil {
		return func() {}
	}
	unset, unvisit := s.calling.set(ss), b.reg.visit(ss, s)
	return func() {
		unset()
		unvisit()
		b.handles.touch(s)
		b.releaseIfLetGo(s)
	}
}

// withHandle makes res, the first answer of a new handle's session, name
// the handle: in the text the model reads, and in structured content
// (which some clients show alone: it carries the text too).
func withHandle(res *mcp.CallToolResult, handle string) *mcp.CallToolResult {
	if handle == "" || res == nil {
		return res
	}
	out := withNote(res, fmt.Sprintf("[new session %s: pass \"session\": %q to run in it again; without it each call starts a new one]\n", handle, handle))
	var text strings.Builder
	for _, c := range out.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	out.StructuredContent = map[string]any{"session": handle, "text": text.String()}
	return out
}

// ListSessions describes the live session handles of the principal with
// the go-sdk user id userID, or of every principal when all is set: for
// the HTTP front's limits and the CLI. No handle is in it.
func (b *Bridge) ListSessions(userID string, all bool) []SessionInfo {
	return b.handles.list(userPrincipal(userID), all)
}

// EndSession ends the session tagged tag (a tag a listing gave, or the
// handle itself) of the principal with the go-sdk user id userID, as to
// make room for a newer one when evicted is set, and reports whether
// that principal had it. The handle reads as ended at once; its sandbox
// is removed in the background ([Bridge.Close] waits for that).
func (b *Bridge) EndSession(tag, userID string, evicted bool) bool {
	why := goneEnded
	if evicted {
		why = goneEvicted
	}
	remove, ok := b.handles.endTag(tag, userPrincipal(userID), why)
	if ok {
		go remove()
	}
	return ok
}

// userPrincipal is the principal of a go-sdk user id, as [principalOf]
// reads a request's: "" (no token) is the local user.
func userPrincipal(userID string) principal.Principal {
	if userID == "" {
		return principal.Local()
	}
	return principal.FromUserID(userID)
}

// sessionsView is what a session's sandbox sees of its principal's
// handle sessions: it may list them and end any but its own (the cell
// that asks runs in that one).
type sessionsView struct {
	handles *handles
	p       principal.Principal
	self    *session
	// elsewhere ends a session of p by tag that this bridge does not hold
	// (another bridge of the engine does, or none): its sandbox, on the
	// engine. Nil: none can be.
	elsewhere func(ctx context.Context, tag string, p principal.Principal) error
}

// sessionListing is one session as the sandbox reads it.
type sessionListing struct {
	SessionInfo
	Current bool `json:"current"` // the session the asking cell runs in
}

// errEndOwnSession refuses to end the session the asking cell runs in.
var errEndOwnSession = errors.New("this is the session your code runs in: a cell cannot end its own session (end it from another session, or stop passing its handle and let it idle out)")

// listSessions answers the runtime's sessions: the principal's sessions
// with handles, by tag, oldest first.
func listSessions(_ context.Context, c *call, _ protocol.SessionsParams) (json.RawMessage, error) {
	v := c.sessions
	out := []sessionListing{}
	if v != nil {
		v.handles.mu.Lock()
		own := map[string]bool{}
		for d, e := range v.handles.live {
			own[tagOf(d)] = e.sess == v.self
		}
		v.handles.mu.Unlock()
		for _, i := range v.handles.list(v.p, false) {
			out = append(out, sessionListing{SessionInfo: i, Current: own[i.Tag]})
		}
	}
	return json.Marshal(out)
}

// endSession answers the runtime's end_session: it ends one of the
// principal's sessions, named by its tag or handle; another principal's
// is unknown, as a handle is.
func endSession(ctx context.Context, c *call, p protocol.EndSessionParams) (json.RawMessage, error) {
	v := c.sessions
	if v == nil || p.Session == "" {
		return nil, errUnknownHandle
	}
	if v.owns(p.Session) {
		return nil, errEndOwnSession
	}
	if remove, ok := v.handles.endTag(p.Session, v.p, goneEnded); ok {
		remove()
		return json.Marshal(map[string]bool{"ended": true})
	}
	err := sandbox.ErrNoTag
	if v.elsewhere != nil {
		err = v.elsewhere(ctx, tagOfName(p.Session), v.p)
	}
	switch {
	case errors.Is(err, sandbox.ErrNoTag):
		return nil, fmt.Errorf("no session of yours is %q: runtime.sessions() lists them by tag", p.Session)
	case err != nil: // the engine's error, after the principal's check: no other principal's session shows in it
		return nil, fmt.Errorf("ending session %q on the sandbox engine: %w; try again", p.Session, err)
	}
	return json.Marshal(map[string]bool{"ended": true})
}

// tagOfName is the tag a name gives: the tag itself, or a handle's.
func tagOfName(name string) string {
	if strings.HasPrefix(name, handlePrefix) {
		return HandleTag(name)
	}
	return name
}

// owns reports whether tag (or a handle) names the view's own session.
func (v *sessionsView) owns(tag string) bool {
	tag = tagOfName(tag)
	v.handles.mu.Lock()
	defer v.handles.mu.Unlock()
	for d, e := range v.handles.live {
		if tagOf(d) == tag {
			return e.sess == v.self
		}
	}
	return false
}
