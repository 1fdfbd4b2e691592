package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Questions for the client while a run_python call runs: the gate's
// approvals (elicitation), and what an upstream asks of its client
// (sampling, elicitation).
//
// A client on MCP protocol 2026-07-28 or later takes no request from a
// server in the middle of a call (SEP-2322, multi round-trip requests): a
// server that needs the user or the client's model ends the call with
// input requests, and the client calls again with the answers and the
// request state it was given. A cell cannot stop half-way through an
// await, so for such a client the cell runs apart from the call: each
// call ends with the cell's result, or with the questions the cell is
// waiting on; the client's next call brings the answers to the waiting
// cell and waits on. Older clients are asked directly, in the call.

// multiRoundTrip reports whether ss's client takes questions only as input
// requests of a call.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// abandonAfter is how long a finished cell's result waits for the client
// to call again before it is dropped.
const abandonAfter = 10 * time.Minute

// errNoCall answers a question for a client on the newer protocol when no
// run_python call of its is running to carry it.
var errNoCall = errors.New("the MCP client takes requests only within a run_python call (protocol 2026-07-28 and later), and none of its calls is running")

// clientQuestion is one input request and where its answer goes.
type clientQuestion struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse // buffered: the answer never blocks
	id     string                 // its key in the run's waiting, once asked (guarded by the run's mu)
}

// detachedRun is one run_python call of a client on the newer protocol:
// its cell, the questions the cell waits on, and its result.
type detachedRun struct {
	id     string
	ss     *mcp.ServerSession
	sess   *session             // the sandbox session it runs in
	asks   chan *clientQuestion // a question of the cell, taken by the waiting call
	done   chan *mcp.CallToolResult
	cancel context.CancelFunc // interrupts the cell

	mu        sync.Mutex
	waiting   map[string]*clientQuestion // asked of the client, not answered yet
	next      int
	watch     func(stream, text string) // the waiting call's output hook
	waitCtx   context.Context           // the waiting call's request context, for its log messages
	collected bool                      // a call took the result
	note      string                    // begins the result: what starting this run did to others
	left      bool                      // the client left this run's questions unanswered: ask no more
	abandon   *time.Timer               // drops a result no call takes
}

// ask puts q to the client through the run's calls and waits for the
// answer, until ctx ends.
func (r *detachedRun) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	q := &clientQuestion{req: req, answer: make(chan mcp.InputResponse, 1)}
	r.mu.Lock()
	left := r.left
	r.mu.Unlock()
	if left {
		return nil, errAbandoned
	}
	select {
	case r.asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		if a == nil {
			return nil, errAbandoned
		}
		return a, nil
	case <-ctx.Done():
		r.forget(q) // not asked again in the next round
		return nil, ctx.Err()
	}
}

// errAbandoned ends a question the client left unanswered: it called
// run_python again without the request state that would have answered it.
var errAbandoned = errors.New("the MCP client left this question unanswered and started another run_python call, so it was declined")

// abandonedNote begins the answer of the call that declined an earlier
// call's unanswered questions.
const abandonedNote = "[an earlier run_python call was waiting for your answer to %d question(s) (approvals or an upstream's requests); this call arrived without answering, so they were declined and that cell went on without them]\n"

// declineWaiting declines the questions r waits on when no call of the
// client carries them any more (one was answered with input requests and
// the client moved on), and returns how many it declined.
func (r *detachedRun) declineWaiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waitCtx != nil {
		return 0 // a call of the client waits on them now
	}
	n := len(r.waiting)
	if n > 0 {
		r.left = true // its later questions would wait for a call that will not come
	}
	for id, q := range r.waiting {
		if _, ok := q.req.(*mcp.ElicitParams); ok {
			q.answer <- &mcp.ElicitResult{Action: "decline"}
		} else {
			q.answer <- nil
		}
		delete(r.waiting, id)
	}
	return n
}

func (r *detachedRun) forget(q *clientQuestion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting[q.id] == q {
		delete(r.waiting, q.id)
	}
}

// output passes the cell's output to the hook of the call waiting now.
func (r *detachedRun) output(stream, text string) {
	r.mu.Lock()
	f := r.watch
	r.mu.Unlock()
	if f != nil {
		f(stream, text)
	}
}

// setWaiting records the call waiting now: its request's context and its
// output hook ([detachedRun.clearWaiting] when none waits).
func (r *detachedRun) setWaiting(ctx context.Context, f func(stream, text string)) {
	r.mu.Lock()
	r.waitCtx, r.watch = ctx, f
	r.mu.Unlock()
}

// clearWaiting records that no call waits now.
func (r *detachedRun) clearWaiting() {
	r.mu.Lock()
	r.waitCtx, r.watch = nil, nil
	r.mu.Unlock()
}

// logContext is the context the run's log messages are sent in: the
// request context of the call waiting now, so that the client hears them
// within that call, at its level; with no call waiting, none.
func (r *detachedRun) logContext() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waitCtx == nil {
		return context.Background()
	}
	return context.WithoutCancel(r.waitCtx)
}

// inputRequired ends a call with q and every other question queued now,
// and the questions still unanswered from before.
func (r *detachedRun) inputRequired(q *clientQuestion) *mcp.CallToolResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	for q != nil {
		r.next++
		q.id = fmt.Sprintf("q%d", r.next)
		r.waiting[q.id] = q
		select {
		case q = <-r.asks:
		default:
			q = nil
		}
	}
	reqs := mcp.InputRequestMap{}
	for id, w := range r.waiting {
		reqs[id] = w.req
	}
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: r.id}
}

// answer gives the client's answers to the questions they are for; it
// reports whether questions are left unanswered.
func (r *detachedRun) answer(answers mcp.InputResponseMap) (left bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range answers {
		if q, ok := r.waiting[id]; ok {
			q.answer <- a
			delete(r.waiting, id)
		}
	}
	return len(r.waiting) > 0
}

// roundTrips are the detached runs of a bridge, by request state.
type roundTrips struct {
	mu      sync.Mutex
	runs    map[string]*detachedRun
	current map[*mcp.ServerSession]*detachedRun // the run whose cell last asked the host
}

func (t *roundTrips) add(ss *mcp.ServerSession, cancel context.CancelFunc) *detachedRun {
	var id [12]byte
	_, _ = rand.Read(id[:])
	r := &detachedRun{id: "cb-" + hex.EncodeToString(id[:]), ss: ss, asks: make(chan *clientQuestion),
		done: make(chan *mcp.CallToolResult, 1), cancel: cancel, waiting: map[string]*clientQuestion{}}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runs == nil {
		t.runs, t.current = map[string]*detachedRun{}, map[*mcp.ServerSession]*detachedRun{}
	}
	t.runs[r.id] = r
	return r
}

// get is the run of ss with request state id, or nil.
func (t *roundTrips) get(id string, ss *mcp.ServerSession) *detachedRun {
	return t.getIf(id, func(r *detachedRun) bool { return r.ss == ss })
}

// getIf is the run with request state id, if ok says it is the caller's,
// or nil.
func (t *roundTrips) getIf(id string, ok func(*detachedRun) bool) *detachedRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.runs[id]; r != nil && ok(r) {
		return r
	}
	return nil
}

// inHandle reports whether r runs in a handle's session of principal p:
// on the stateless protocol each request has a session of its own, so
// the handle's, and its principal, tell the caller's runs.
func (r *detachedRun) inHandle(p principal.Principal) bool {
	return r.sess != nil && r.sess.calling != nil && r.sess.principal == p
}

// finish hands r's result to the call that waits for it. A client that
// never calls again would leave the result here: unless a call took it,
// it is dropped abandonAfter later.
func (t *roundTrips) finish(r *detachedRun, res *mcp.CallToolResult) {
	r.done <- res
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.collected {
		r.abandon = time.AfterFunc(abandonAfter, func() { t.remove(r) })
	}
}

func (t *roundTrips) remove(r *detachedRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, r.id)
	if t.current[r.ss] == r {
		delete(t.current, r.ss)
	}
}

// touch records that r's cell is the one of its session that runs: an
// upstream's question, which carries no trace of its call, goes to it.
func (t *roundTrips) touch(r *detachedRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current[r.ss] != r && t.runs[r.id] == r {
		t.current[r.ss] = r
	}
}

// of is the run whose cell runs for ss now, or nil.
func (t *roundTrips) of(ss *mcp.ServerSession) *detachedRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current[ss]
}

// declineAbandoned declines the unanswered questions of every run of ss
// (or, with a handle's session, of sess) that no call waits on, and
// returns how many it declined.
func (t *roundTrips) declineAbandoned(ss *mcp.ServerSession, sess *session) int {
	t.mu.Lock()
	runs := make([]*detachedRun, 0, len(t.runs))
	for _, r := range t.runs {
		if r.ss == ss || (sess != nil && sess.calling != nil && r.sess == sess) {
			runs = append(runs, r)
		}
	}
	t.mu.Unlock()
	n := 0
	for _, r := range runs {
		n += r.declineWaiting()
	}
	return n
}

// endSession drops the runs of ss (its session ended).
func (t *roundTrips) endSession(ss *mcp.ServerSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, r := range t.runs {
		if r.ss == ss {
			r.cancel()
			delete(t.runs, id)
		}
	}
	delete(t.current, ss)
}

// runDetached starts the cell of a client on the newer protocol apart
// from its call, then waits as a call does. Its result begins with note.
func (b *Bridge) runDetached(ctx context.Context, req *mcp.CallToolRequest, sess *session, note string, start func(context.Context, *detachedRun) *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	declined := b.trips.declineAbandoned(req.Session, sess)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := b.trips.add(req.Session, cancel)
	r.note, r.sess = note, sess
	if declined > 0 {
		r.note += fmt.Sprintf(abandonedNote, declined)
	}
	go func() {
		defer cancel()
		b.trips.finish(r, start(runCtx, r))
	}()
	return b.waitDetached(ctx, req, sess, r)
}

// errUnknownRun answers a continuation whose run this bridge does not
// have. Behind a balancer, the likeliest cause is a continuation sent to
// another replica than the one whose call asked: the run waits there.
const errUnknownRun = "this run_python call continues one this codebridge does not have: it ended, was abandoned, belongs to another session, " +
	"or runs on another codebridge replica (the answers to a call's questions must reach the replica that asked them: " +
	"route a client's requests to one replica, or a handle's by its Mcp-Param-Session header); run the code again " +
	"(a cell that waits on another replica for answers ends at its time limit)"

// resumeDetached is a call that brings the answers to a detached run's
// questions: it gives them to the cell and waits on.
func (b *Bridge) resumeDetached(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var r *detachedRun
	var sess *session
	if b.stateless(req.Session) {
		// The request's session is new: the run is the caller's by its
		// handle's principal.
		p := principalOf(req.Extra)
		if r = b.trips.getIf(req.Params.RequestState, func(r *detachedRun) bool { return r.inHandle(p) }); r != nil {
			sess = r.sess
		}
	} else {
		s, err := b.sessionOf(req.Session, req.Extra)
		if err != nil {
			return errorResult("%v", err), nil
		}
		sess, r = s, b.trips.get(req.Params.RequestState, req.Session)
	}
	if r == nil {
		return errorResult("%s", errUnknownRun), nil
	}
	if r.answer(req.Params.InputResponses) {
		return r.inputRequired(nil), nil
	}
	return b.waitDetached(ctx, req, sess, r)
}

// waitDetached waits for r's result or its next questions. A call the
// client cancels interrupts the cell, as for any run_python call.
func (b *Bridge) waitDetached(ctx context.Context, req *mcp.CallToolRequest, sess *session, r *detachedRun) (*mcp.CallToolResult, error) {
	onOutput, stop := startProgress(ctx, req, sess.host.redactText)
	r.setWaiting(ctx, onOutput)
	defer stop()
	defer r.clearWaiting()
	select {
	case res := <-r.done:
		r.mu.Lock()
		r.collected = true
		if r.abandon != nil {
			r.abandon.Stop()
		}
		r.mu.Unlock()
		b.trips.remove(r)
		return withNote(res, r.note), nil
	case q := <-r.asks:
		return r.inputRequired(q), nil
	case <-ctx.Done():
		r.cancel()
		b.trips.remove(r)
		return nil, ctx.Err()
	}
}

// ask puts one question to ss: directly, or, for a client on the newer
// protocol, through r, the run_python call the question belongs to.
func ask(ctx context.Context, ss *mcp.ServerSession, r *detachedRun, q mcp.InputRequest) (mcp.InputResponse, error) {
	if multiRoundTrip(ss) {
		if r == nil || r.ss != ss {
			return nil, errNoCall
		}
		return r.ask(ctx, q)
	}
	switch p := q.(type) {
	case *mcp.ElicitParams:
		return ss.Elicit(ctx, p)
	case *mcp.CreateMessageParams:
		return ss.CreateMessage(ctx, p)
	}
	return nil, fmt.Errorf("codebridge cannot ask the client %T", q)
}

// asElicitResult and asCreateMessageResult take the answer a question
// got, in either of the forms a client gives.
func asElicitResult(a mcp.InputResponse, err error) (*mcp.ElicitResult, error) {
	if err != nil {
		return nil, err
	}
	if r, ok := a.(*mcp.ElicitResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("the MCP client answered an elicitation with %T", a)
}

func asCreateMessageResult(a mcp.InputResponse, err error) (*mcp.CreateMessageResult, error) {
	if err != nil {
		return nil, err
	}
	switch r := a.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		if len(r.Content) == 0 {
			return nil, errors.New("the MCP client's model answered with no content")
		}
		return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
	}
	return nil, fmt.Errorf("the MCP client answered a sampling request with %T", a)
}

// withNote returns res with note as its first text, if there is a note.
func withNote(res *mcp.CallToolResult, note string) *mcp.CallToolResult {
	if note == "" || res == nil {
		return res
	}
	out := *res
	out.Content = append([]mcp.Content{&mcp.TextContent{Text: note}}, res.Content...)
	return &out
}
