package gate

import (
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// MaxCellCalls is how many calls of one cell its ledger keeps in detail:
// the last ones; the calls before them are only counted, by state.
const MaxCellCalls = 20

// CallState is where one call of a cell stands, as its audit records
// say: a call is running from its "call" record (the upstream may act
// on it from then on) until its "done" record gives its outcome.
type CallState string

// The states of a call ([Record.Outcome], and running before its end).
const (
	CallRunning   CallState = "running"    // sent on to the upstream; no answer yet
	CallOK        CallState = "ok"         // the upstream answered
	CallToolError CallState = "tool_error" // the tool answered with isError
	CallFailed    CallState = "error"      // the call did not complete ([Call.Err] says why)
	CallCancelled CallState = "cancelled"  // cancelled before the upstream answered: its outcome is unknown
	CallDenied    CallState = "denied"     // the gate did not let it through: the upstream never saw it
)

// Call is one request a cell made that acts on something (a tool call,
// a resource read, a prompt, an install), as the cell's ledger keeps it.
type Call struct {
	// Seq is its place among the cell's calls, from 1, in the order the
	// gate decided them.
	Seq    int
	Target protocol.Target
	State  CallState
	// Err is why a failed or denied call failed (its message redacted;
	// errors.Is and As find its cause, for its kind).
	Err error
	// Duration is from when the upstream was asked to its answer; zero
	// while it runs, and for a denied call.
	Duration time.Duration

	counted bool // it left the detail: it is counted in earlier
}

// Calls is one cell's ledger at one moment.
type Calls struct {
	// Total is how many calls the cell made.
	Total int
	// Last are the last [MaxCellCalls] of them, in order.
	Last []Call
	// Earlier counts the calls before Last by state.
	Earlier map[CallState]int
}

// ledger is the calls of one cell (one [Run]), fed by the same records
// as the audit log, at the same points ([Session.record]): the cell's end
// does not end it, since a call cancelled by that end records its
// outcome a moment later.
type ledger struct {
	mu      sync.Mutex
	total   int
	last    []*Call           // at most MaxCellCalls, oldest first
	earlier map[CallState]int // the states of the calls that left last
	open    map[string]*Call  // the calls without a "done" record yet, by record ID
}

func newLedger() *ledger {
	return &ledger{earlier: map[CallState]int{}, open: map[string]*Call{}}
}

// record takes one audit record of the cell: a "call" record adds a call
// (denied, or running until its "done" record, matched by ID, ends it);
// err is the error the call ended with, if any.
func (l *ledger) record(r Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r.Event {
	case "call":
		l.total++
		c := &Call{Seq: l.total, Target: protocol.Target{Kind: r.Kind, Server: r.Server, Name: r.Name}, State: CallRunning}
		if r.Outcome == string(CallDenied) {
			c.State, c.Err = CallDenied, err
		} else {
			l.open[r.ID] = c
		}
		l.add(c)
	case "done":
		c := l.open[r.ID]
		if c == nil {
			return
		}
		delete(l.open, r.ID)
		c.Duration = time.Duration(r.DurationMS * float64(time.Millisecond))
		l.settle(c, CallState(r.Outcome), err)
	}
}

// add appends c to the detail, counting the oldest call when the detail
// is full.
func (l *ledger) add(c *Call) {
	if len(l.last) == MaxCellCalls {
		old := l.last[0]
		old.counted = true
		l.earlier[old.State]++
		copy(l.last, l.last[1:])
		l.last = l.last[:MaxCellCalls-1]
	}
	l.last = append(l.last, c)
}

// settle gives a running call its end, in the counts too when it has
// left the detail.
func (l *ledger) settle(c *Call, state CallState, err error) {
	if c.counted {
		l.earlier[c.State]--
		if l.earlier[c.State] == 0 {
			delete(l.earlier, c.State)
		}
		l.earlier[state]++
	}
	c.State, c.Err = state, err
}

// calls is the ledger as it stands.
func (l *ledger) calls() Calls {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := Calls{Total: l.total, Last: make([]Call, len(l.last)), Earlier: make(map[CallState]int, len(l.earlier))}
	for i, c := range l.last {
		out.Last[i] = *c
	}
	for s, n := range l.earlier {
		out.Earlier[s] = n
	}
	return out
}

// Calls is the ledger of the run's cell: the requests it made that act
// on something, and where each stands. A nil run made none.
func (r *Run) Calls() Calls {
	if r == nil {
		return Calls{}
	}
	return r.calls.calls()
}

// Previous is the ledger of the cell of the run_python call its session
// started before this one; false when there was none.
func (r *Run) Previous() (Calls, bool) {
	if r == nil || r.prev == nil {
		return Calls{}, false
	}
	return r.prev.calls(), true
}

// record writes r to the audit log, and to the ledger of run's cell (a
// nil run: a request made outside a cell), whether or not there is an
// audit log: both are fed at the same points, from the same records. err
// is the error the request ended with, if any.
func (s *Session) record(run *Run, r Record, err error) {
	if run != nil {
		run.calls.record(r, err)
	}
	s.audit(r)
}
