package gate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// Approvals. A request the policy answers "ask" waits here for the user.
// The user sees the calls and the cell's code around them ([Question]) and
// answers for these calls only, for every call of their tools for the
// rest of the cell, or for the session; or declines ([Scope]).
//
// Calls a cell makes together (asyncio.gather) are asked about together:
// the runtime marks the requests it sent in one loop turn with a batch id
// and their number ([Batch]), and the first of them to need an answer
// waits until every one of the batch has reached its decision (asked or
// not) before one question lists those that need it, or, when they are
// more than one question holds ([MaxListed], [MaxQuestionBytes]),
// several questions in turn, each deciding only the calls it lists
// ([Session.ask]). No answer ever decides a call its question did not
// show with its server, tool, arguments and rule. Nothing is timed: a
// batch forms when its last member arrives. A sandbox that lies about a
// batch (a size it never sends) delays only its own calls: a member waits
// for the rest at most the approval timeout, and never past its cell's
// end (its context), then asks with the members that came.
//
// A call of a tool about which a question is out in the same cell waits
// for its answer: if it covered the cell or the session, the call passes;
// otherwise it is asked about on its own.

// Scope is how far an approval reaches.
type Scope int

// The answers' scopes.
const (
	// Once allows the calls asked about, and no other.
	Once Scope = iota
	// ForCell allows them and every later call of their tools in the
	// same cell (run_python call).
	ForCell
	// ForSession allows them and every later call of their tools in the
	// sandbox session.
	ForSession
)

// Question is what an [Asker] puts to the user: one call, or calls of a
// batch. An answer decides the calls it lists and no other: a batch too
// large for one question is asked in parts, one question after another
// (see [Session.ask]).
type Question struct {
	// Calls are the calls the answer decides, every one listed, at most
	// [MaxListed] and about [MaxQuestionBytes] of them; in the order of
	// their lines.
	Calls []AskedCall
	// Part is which question this is (from 1) of the Parts the batch's
	// calls are asked in; Parts is 1 when the batch is asked whole. Parts
	// counts the questions still needed when this one is asked: an answer
	// for the cell or the session can leave a later one with nothing to
	// ask.
	Part, Parts int
	// Total is how many calls of the batch needed an answer when its
	// first question was asked.
	Total int
	// Code is the cell's code around the first call's line, cut to a few
	// lines with what is left out counted, every character that does not
	// print escaped ([codeAround]); empty when the request names no cell.
	Code string
}

// AskedCall is one call in a [Question].
type AskedCall struct {
	Target protocol.Target
	// Arguments are the arguments the upstream receives, in their
	// canonical form, each long string cut with its size (see
	// showArguments): never the text the sandbox sent.
	Arguments string
	// Rule is the rule that asked.
	Rule string
	// Line is the line of the cell's code that made the call, as the
	// runtime said; 0 when unknown or not a line of the cell.
	Line int
}

// What one question holds at most: more is asked in further questions.
const (
	// MaxListed is how many calls one question lists.
	MaxListed = 8
	// MaxQuestionBytes is about how many bytes of calls (server, tool,
	// arguments as shown, rule) one question holds; a single call larger
	// than that is a question of its own (its arguments are cut at about
	// maxShownArgs).
	MaxQuestionBytes = 4096
)

// Answer is the user's reply.
type Answer struct {
	Allow  bool
	Scope  Scope  // how far an approval reaches
	Reason string // why not, in the user's (or the client's) words
}

// ErrCannotAsk is returned by an [Asker] whose client cannot ask the user
// (no elicitation support, or no client: codebridge exec).
var ErrCannotAsk = errors.New("the MCP client cannot ask the user (it does not support elicitation)")

// Asker asks the user about one or more requests and waits for the
// answer, at most until ctx ends.
type Asker func(ctx context.Context, q Question) (Answer, error)

// Batch marks a request the runtime sent together with others (one turn
// of the cell's event loop): ID is the runtime's name for them, unique in
// the cell, and Size their number. The zero Batch is a request sent
// alone. Both are the sandbox's word: they decide only which of the
// cell's own calls share a question, and when it is asked.
type Batch struct {
	ID   int64
	Size int
}

// maxForming bounds the batches one cell keeps count of; the requests of
// any further batch are asked about alone.
const maxForming = 1024

// approvals is a cell's state of approval: the tools allowed for the rest
// of it, the questions out, and the batches forming.
type approvals struct {
	mu       sync.Mutex
	approved map[string]bool          // tool key -> allowed for the rest of the cell
	out      map[string]chan struct{} // tool key -> closed when the question out about it is answered
	batches  map[int64]*batch
	queued   int // requests waiting for the answer to a question out (tests read it)
}

// batch is a batch of requests forming: how many reached their decision,
// and those waiting to be asked about.
type batch struct {
	size    int
	arrived int
	members []*member
	formed  chan struct{} // closed when all arrived, or a member stopped waiting
	taken   bool          // its members were taken to be asked about
}

// member is one request waiting for the user's answer.
type member struct {
	key  string
	call AskedCall
	res  chan verdict // buffered: the decision, from whoever asked
}

// verdict is a decision and who made it (the audit's "by").
type verdict struct {
	d  Decision
	by string
}

func toolKey(t protocol.Target) string { return t.Kind + "\x00" + t.Server + "\x00" + t.Name }

// approve settles a request: one the policy did not leave to the user
// only counts towards its batch; one it did is allowed by an approval for
// the cell or the session, else asked about, with its batch.
func (s *Session) approve(ctx context.Context, req Request, d Decision, by string, args []byte) (Decision, string) {
	var a *approvals
	if req.Run != nil {
		a = &req.Run.approvals
	}
	if d.Verdict != Ask {
		a.arrive(req.Batch, nil)
		return d, by
	}
	m := &member{key: toolKey(req.Target), res: make(chan verdict, 1),
		call: AskedCall{Target: req.Target, Arguments: showArguments(args), Rule: d.Rule, Line: req.Line}}
	if v, ok := s.approvedAlready(a, m); ok || req.Ask == nil {
		a.arrive(req.Batch, nil)
		if !ok {
			v = verdict{Decision{Deny, d.Rule}, "no-client"}
		}
		return v.d, v.by
	}
	group, forming := a.arrive(req.Batch, m)
	if forming != nil {
		group = a.wait(ctx, req.Batch.ID, forming, m, s.g.cfg.ApprovalTimeout)
	}
	if group != nil {
		s.ask(ctx, req, group)
	}
	select {
	case v := <-m.res:
		return v.d, v.by
	case <-ctx.Done():
		return Decision{Deny, d.Rule + ": asking the user failed: " + ctx.Err().Error()}, "error"
	}
}

// Unasked counts a request of batch b of the run's cell that failed
// before the gate decided it (its server is unknown or did not start, its
// parameters do not decode), so that the rest of its batch does not wait
// for it. r may be nil.
func (r *Run) Unasked(b Batch) {
	if r != nil {
		r.approvals.arrive(b, nil)
	}
}

// approvedAlready is the decision on m when an earlier answer covers its
// tool: for the session, or for the cell (a may be nil: no cell).
func (s *Session) approvedAlready(a *approvals, m *member) (verdict, bool) {
	s.mu.Lock()
	ok := s.approved[m.key]
	s.mu.Unlock()
	if ok {
		return verdict{Decision{Allow, m.call.Rule}, "session"}, true
	}
	if a != nil {
		a.mu.Lock()
		ok = a.approved[m.key]
		a.mu.Unlock()
	}
	if ok {
		return verdict{Decision{Allow, m.call.Rule}, "cell"}, true
	}
	return verdict{}, false
}

// arrive counts a request of batch b that reached its decision; m is the
// request when it waits for the user (nil when decided without asking).
// It returns the members to ask about now when m is to ask (alone, or
// the last of its batch to arrive), or the batch m is to wait for. a may
// be nil (no cell): m is then asked about alone.
func (a *approvals) arrive(b Batch, m *member) ([]*member, *batch) {
	if a == nil || b.ID == 0 || b.Size <= 1 {
		return one(m), nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.batches[b.ID]
	if f == nil {
		if len(a.batches) >= maxForming {
			return one(m), nil
		}
		if a.batches == nil {
			a.batches = map[int64]*batch{}
		}
		f = &batch{size: b.Size, formed: make(chan struct{})}
		a.batches[b.ID] = f
	}
	if f.taken { // it was asked about already: a straggler asks alone
		return one(m), nil
	}
	f.arrived++
	if m != nil {
		f.members = append(f.members, m)
	}
	if f.arrived < f.size {
		if m == nil {
			return nil, nil
		}
		return nil, f
	}
	delete(a.batches, b.ID)
	close(f.formed)
	if m == nil {
		return nil, nil // a member that waits takes them (wait)
	}
	f.taken = true
	return f.members, nil
}

func one(m *member) []*member {
	if m == nil {
		return nil
	}
	return []*member{m}
}

// wait waits for batch f (id), where m waits, to form, at most timeout,
// and until ctx ends. It returns the batch's members when m is the one to
// ask about them; nil when another member asks (or the wait ended with
// ctx: m is taken out of its batch, and ctx's end decides it).
func (a *approvals) wait(ctx context.Context, id int64, f *batch, m *member, timeout time.Duration) []*member {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-f.formed:
	case <-t.C:
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		f.drop(m)
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if f.taken {
		return nil
	}
	f.taken = true
	if a.batches[id] == f { // it did not form: its stragglers ask alone
		close(f.formed)
	}
	return f.members
}

// drop takes m out of a batch not yet asked about.
func (f *batch) drop(m *member) {
	if f.taken {
		return
	}
	for i, x := range f.members {
		if x == m {
			f.members = append(f.members[:i], f.members[i+1:]...)
			return
		}
	}
}

// ask asks the user about group (req is one of them) and gives each
// member its decision. Members whose tool a question out in the cell is
// about wait for its answer first; those an answer then covers pass.
//
// The calls are put in the host's order (tool, line, arguments), never
// the order the sandbox sent them in, and asked about in parts of at
// most MaxListed calls and about MaxQuestionBytes, one question after
// another: each answer decides exactly the calls its question lists, and
// one for the cell or the session is remembered for their tools only.
// Before each part, calls that an earlier part's answer now covers pass.
// An answer that allows nothing (declined, no answer in time, no client)
// denies the parts not yet asked, without asking: the user said no to
// this batch once, and is not made to say it again and again.
func (s *Session) ask(ctx context.Context, req Request, group []*member) {
	a := (*approvals)(nil)
	if req.Run != nil {
		a = &req.Run.approvals
	}
	pending, release := s.claim(ctx, a, group)
	if len(pending) == 0 {
		return
	}
	defer release()
	slices.SortStableFunc(pending, hostOrder)
	q := Question{Total: len(pending)}
	for {
		if pending = s.passCovered(a, pending); len(pending) == 0 {
			return
		}
		parts := split(pending)
		q.Part++
		q.Parts = q.Part + len(parts) - 1
		part := parts[0]
		pending = pending[len(part):]
		by, why, ok := s.askPart(ctx, req, a, part, q)
		if !ok {
			denyRest(pending, by, why)
			return
		}
	}
}

// hostOrder orders the calls of a batch as the host chooses: by tool,
// then line, then arguments as shown.
func hostOrder(x, y *member) int {
	if c := strings.Compare(x.key, y.key); c != 0 {
		return c
	}
	if c := x.call.Line - y.call.Line; c != 0 {
		return c
	}
	return strings.Compare(x.call.Arguments, y.call.Arguments)
}

// split cuts members (in the host's order) into the parts they are asked
// in: each at most MaxListed calls and about MaxQuestionBytes (a call
// larger than that alone), in order.
func split(ms []*member) [][]*member {
	var parts [][]*member
	for len(ms) > 0 {
		n, size := 0, 0
		for n < len(ms) && n < MaxListed {
			c := ms[n].call
			size += len(c.Target.Server) + len(c.Target.Name) + len(c.Arguments) + len(c.Rule)
			if n > 0 && size > MaxQuestionBytes {
				break
			}
			n++
		}
		parts = append(parts, ms[:n:n])
		ms = ms[n:]
	}
	return parts
}

// askPart asks one question about part (q says which part of how many)
// and gives each of its members the decision. It returns who decided,
// what a denial adds to the rule, and whether the answer allowed them.
func (s *Session) askPart(ctx context.Context, req Request, a *approvals, part []*member, q Question) (by, why string, ok bool) {
	shown := slices.Clone(part)
	slices.SortStableFunc(shown, func(x, y *member) int { return x.call.Line - y.call.Line }) // as the code reads
	q.Calls = make([]AskedCall, len(shown))
	for i, m := range shown {
		q.Calls[i] = m.call
	}
	if req.Run != nil {
		q.Code = codeAround(req.Run.Code(), q.Calls)
	}
	actx, cancel := context.WithTimeout(ctx, s.g.cfg.ApprovalTimeout)
	defer cancel()
	ans, err := req.Ask(actx, q)
	by, why = answered(ans, err, actx, ctx)
	ok = err == nil && ans.Allow
	if by == "user" && ok {
		s.remember(a, part, ans.Scope)
	}
	for _, m := range part {
		d := Decision{Allow, m.call.Rule}
		if !ok {
			d = Decision{Deny, m.call.Rule + why}
		}
		m.res <- verdict{d, by}
	}
	return by, why, ok
}

// denyRest denies the members of a batch's parts not yet asked about,
// after a part's answer allowed nothing: by and why are that answer's.
func denyRest(rest []*member, by, why string) {
	if why != "" {
		why += " (in a question about other calls of the same batch: the rest of the batch was not asked about)"
	}
	for _, m := range rest {
		m.res <- verdict{Decision{Deny, m.call.Rule + why}, by}
	}
}

// passCovered decides the members an earlier answer for the cell or the
// session covers, and returns the others.
func (s *Session) passCovered(a *approvals, ms []*member) []*member {
	var rest []*member
	for _, m := range ms {
		if v, ok := s.approvedAlready(a, m); ok {
			m.res <- v
		} else {
			rest = append(rest, m)
		}
	}
	return rest
}

// claim decides the members of group an earlier answer covers, and marks
// the tools of the others as asked about in the cell: it waits while a
// question about one of them is out. It returns the members to ask about
// and the function that marks the question answered (none when the
// cell ended meanwhile).
func (s *Session) claim(ctx context.Context, a *approvals, group []*member) ([]*member, func()) {
	for {
		pending := s.passCovered(a, group)
		if a == nil || len(pending) == 0 {
			return pending, func() {}
		}
		a.mu.Lock()
		if busy := a.questionOut(pending); busy != nil {
			a.queued++
			a.mu.Unlock()
			select {
			case <-busy:
			case <-ctx.Done():
			}
			a.mu.Lock()
			a.queued--
			a.mu.Unlock()
			if ctx.Err() != nil {
				return nil, nil // the cell ended: each member's context decides it
			}
			group = pending
			continue
		}
		done := make(chan struct{})
		if a.out == nil {
			a.out = map[string]chan struct{}{}
		}
		for _, m := range pending {
			a.out[m.key] = done
		}
		a.mu.Unlock()
		return pending, func() {
			a.mu.Lock()
			for _, m := range pending {
				if a.out[m.key] == done {
					delete(a.out, m.key)
				}
			}
			a.mu.Unlock()
			close(done)
		}
	}
}

// questionOut is the answered-channel of a question out about one of the
// members' tools, or nil (a.mu held).
func (a *approvals) questionOut(ms []*member) chan struct{} {
	for _, m := range ms {
		if c := a.out[m.key]; c != nil {
			return c
		}
	}
	return nil
}

// remember keeps an approval for the cell or the session.
func (s *Session) remember(a *approvals, ms []*member, scope Scope) {
	switch {
	case scope == ForSession:
		s.mu.Lock()
		for _, m := range ms {
			s.approved[m.key] = true
		}
		s.mu.Unlock()
	case scope == ForCell && a != nil:
		a.mu.Lock()
		if a.approved == nil {
			a.approved = map[string]bool{}
		}
		for _, m := range ms {
			a.approved[m.key] = true
		}
		a.mu.Unlock()
	}
}

// answered is who decided an asked request (the audit's "by") and, when
// it is denied, what to add to its rule; ctx is the request's, actx the
// question's (ctx with the approval timeout).
func answered(ans Answer, err error, actx, ctx context.Context) (by, why string) {
	switch {
	case errors.Is(err, ErrCannotAsk):
		return "no-client", ""
	case err != nil && actx.Err() != nil && ctx.Err() == nil:
		return "timeout", ""
	case err != nil:
		return "error", ": asking the user failed: " + err.Error()
	case !ans.Allow:
		reason := ans.Reason
		if reason == "" {
			reason = "declined"
		}
		return "user", "; the user " + reason
	}
	return "user", ""
}
