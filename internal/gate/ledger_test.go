package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// through sends one call of run through s to do.
func through(s *Session, run *Run, name string, do func(context.Context, json.RawMessage) (json.RawMessage, error)) error {
	_, err := s.Through(context.Background(), Request{Target: tool(name), Params: json.RawMessage(`{"arguments":{}}`), Run: run}, do)
	return err
}

func answer(res string, err error) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(res), err }
}

// blocking is an upstream call that waits in do until released; entered
// is closed once it is there.
type blocking struct{ entered, release chan struct{} }

func newBlocking() *blocking { return &blocking{make(chan struct{}), make(chan struct{})} }

func (b *blocking) do(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	close(b.entered)
	<-b.release
	return json.RawMessage(`{}`), nil
}

// states is a ledger's detail as "seq:name:state" words.
func states(c Calls) string {
	out := ""
	for _, x := range c.Last {
		out += fmt.Sprintf("%d:%s:%s ", x.Seq, x.Target.Name, x.State)
	}
	return out
}

// TestLedgerStates: each way a call ends is its state, in the order the
// gate decided the calls, with no audit log configured (the ledger is fed
// at the same points all the same); a call still waiting on its upstream
// is running, and a call whose cell ended before its answer (its context
// cancelled) is cancelled, in the audit too.
func TestLedgerStates(t *testing.T) {
	s := New(Config{Policy: Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Deny: []string{"drop_*"}}}}}}).NewSession()
	_, run := s.StartRun(context.Background(), "cell")
	_ = through(s, run, "read", answer(`{"content":[]}`, nil))
	_ = through(s, run, "bad", answer(`{"isError":true}`, nil))
	_ = through(s, run, "down", answer(``, errors.New("upstream exited")))
	_ = through(s, run, "drop_all", answer(`{}`, nil))
	ctx, cancel := context.WithCancel(context.Background())
	_, _ = s.Through(ctx, Request{Target: tool("write"), Params: json.RawMessage(`{}`), Run: run}, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		cancel() // the cell ends while the upstream has the call
		return nil, ctx.Err()
	})
	b := newBlocking()
	go func() { _ = through(s, run, "slow", b.do) }()
	<-b.entered

	c := run.Calls()
	if got, want := states(c), "1:read:ok 2:bad:tool_error 3:down:error 4:drop_all:denied 5:write:cancelled 6:slow:running "; got != want || c.Total != 6 {
		t.Fatalf("ledger: %q (total %d), want %q", got, c.Total, want)
	}
	if !errors.Is(c.Last[3].Err, ErrPolicy) || c.Last[2].Err == nil || c.Last[2].Err.Error() != "upstream exited" || c.Last[0].Err != nil {
		t.Fatalf("errors: %v, %v, %v", c.Last[3].Err, c.Last[2].Err, c.Last[0].Err)
	}
	if c.Last[3].Target != tool("drop_all") || c.Last[3].Duration != 0 {
		t.Fatalf("denied call: %+v", c.Last[3])
	}
	close(b.release)
}

// TestLedgerCancelledInAudit: the audit's done line of a call its cell's
// end cancelled says so (the ledger reads the same record).
func TestLedgerCancelledInAudit(t *testing.T) {
	s, path := newGate(t, Policy{})
	ctx, cancel := context.WithCancel(context.Background())
	_, _ = s.Through(ctx, Request{Target: tool("write"), Params: json.RawMessage(`{}`)}, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		cancel()
		return nil, ctx.Err()
	})
	recs := readRecords(t, path)
	if len(recs) != 2 || recs[1].Outcome != "cancelled" {
		t.Fatalf("records: %+v", recs)
	}
}

// TestLedgerBound: a cell keeps its last MaxCellCalls calls in detail and
// counts the rest by state; a call that leaves the detail while it runs
// moves in the counts when it ends.
func TestLedgerBound(t *testing.T) {
	s := New(Config{}).NewSession()
	_, run := s.StartRun(context.Background(), "cell")
	b := newBlocking()
	done := make(chan struct{})
	go func() { _ = through(s, run, "slow", b.do); close(done) }()
	<-b.entered
	for i := range MaxCellCalls + 4 {
		_ = through(s, run, fmt.Sprint("t", i), answer(`{}`, nil))
	}
	c := run.Calls()
	if c.Total != MaxCellCalls+5 || len(c.Last) != MaxCellCalls || c.Last[0].Seq != 6 || c.Last[MaxCellCalls-1].Seq != MaxCellCalls+5 {
		t.Fatalf("total %d, %d kept, from %d", c.Total, len(c.Last), c.Last[0].Seq)
	}
	if len(c.Earlier) != 2 || c.Earlier[CallRunning] != 1 || c.Earlier[CallOK] != 4 {
		t.Fatalf("earlier: %v", c.Earlier)
	}
	close(b.release)
	<-done
	if c := run.Calls(); len(c.Earlier) != 1 || c.Earlier[CallOK] != 5 {
		t.Fatalf("earlier once the first call ended: %v", c.Earlier)
	}
}

// TestLedgerCells: a run sees its own cell's calls and those of the run
// its session started before it, no others; a call that ends after its
// cell (cancelled by that end) still updates its own cell; and another
// session's runs (another principal's) see none of it.
func TestLedgerCells(t *testing.T) {
	g := New(Config{})
	s := g.NewSessionOf("token:alice")
	_, first := s.StartRun(context.Background(), "one")
	if _, ok := first.Previous(); ok {
		t.Fatal("the first run has a previous cell")
	}
	b := newBlocking()
	done := make(chan struct{})
	go func() { _ = through(s, first, "late", b.do); close(done) }()
	<-b.entered
	_, second := s.StartRun(context.Background(), "two")
	_ = through(s, second, "b", answer(`{}`, nil))
	close(b.release)
	<-done
	prev, ok := second.Previous()
	if got := states(second.Calls()); got != "1:b:ok " || !ok || states(prev) != "1:late:ok " {
		t.Fatalf("second: %q, previous %q (%v)", got, states(prev), ok)
	}
	_, third := s.StartRun(context.Background(), "three")
	if prev, _ := third.Previous(); states(prev) != "1:b:ok " || third.Calls().Total != 0 {
		t.Fatalf("third: previous %q", states(prev))
	}

	other := g.NewSessionOf("token:mallory")
	_, theirs := other.StartRun(context.Background(), "runtime.calls()")
	if _, ok := theirs.Previous(); ok || theirs.Calls().Total != 0 {
		t.Fatal("another session's run sees this session's calls")
	}
	var none *Run
	if none.Calls().Total != 0 {
		t.Fatal("a nil run has calls")
	}
}
