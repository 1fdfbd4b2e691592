package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// askAll is a policy that asks about every tool of "mem" but "free".
var askAll = Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Ask: []string{"rm", "wipe"}, Allow: []string{"free"}}}}}

// recorder is an Asker that keeps the questions and gives one answer.
type recorder struct {
	mu  sync.Mutex
	qs  []Question
	ans Answer
}

func (r *recorder) ask(_ context.Context, q Question) (Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.qs = append(r.qs, q)
	return r.ans, nil
}

func (r *recorder) asked() []Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.qs
}

// gathered makes n calls of tool name in run at once, as one batch of
// size (0: not a batch), the i-th from line i+1; it returns their errors.
func gathered(ctx context.Context, s *Session, run *Run, a Asker, name string, n, size int, id int64) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := Request{Target: tool(name), Params: json.RawMessage(fmt.Sprintf(`{"arguments":{"i":%d}}`, i)), Ask: a,
				Run: run, Line: i + 1, Batch: Batch{ID: id, Size: size}}
			_, errs[i] = s.Through(ctx, req, (&fakeUpstream{res: `{}`}).do)
		}()
	}
	wg.Wait()
	return errs
}

func decidedBy(t *testing.T, path string) string {
	t.Helper()
	var by []string
	for _, r := range readRecords(t, path) {
		if r.Event == "call" {
			by = append(by, r.By)
		}
	}
	return strings.Join(by, ",")
}

const fiveLines = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"

// TestApprovalBatchAsksOnce: five calls of a batch are one question that
// lists them all, with the code of their lines; a member the policy
// allows counts towards the batch without being listed; allowing once
// lets all five through, and the next call is asked again.
func TestApprovalBatchAsksOnce(t *testing.T) {
	s, path := newGate(t, askAll)
	_, run := s.StartRun(context.Background(), fiveLines)
	r := &recorder{ans: Answer{Allow: true}}
	errs := make(chan error, 1)
	go func() { // the sixth member, decided without asking
		_, err := s.Through(context.Background(), Request{Target: tool("free"), Params: json.RawMessage(`{}`), Run: run, Batch: Batch{ID: 7, Size: 6}},
			(&fakeUpstream{res: `{}`}).do)
		errs <- err
	}()
	for i, err := range gathered(context.Background(), s, run, r.ask, "rm", 5, 6, 7) {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	qs := r.asked()
	if len(qs) != 1 || len(qs[0].Calls) != 5 || qs[0].Part != 1 || qs[0].Parts != 1 || qs[0].Total != 5 {
		t.Fatalf("asked %d questions: %+v", len(qs), qs)
	}
	lines := map[int]bool{}
	for _, c := range qs[0].Calls {
		lines[c.Line] = true
		if c.Target.Name != "rm" || !strings.Contains(c.Arguments, `"i":`) {
			t.Fatalf("a listed call: %+v", c)
		}
	}
	if len(lines) != 5 || !strings.Contains(qs[0].Code, "> 1 | a = 1") || !strings.Contains(qs[0].Code, "> 5 | e = 5") {
		t.Fatalf("the lines: %v, the code:\n%s", lines, qs[0].Code)
	}
	_ = gathered(context.Background(), s, run, r.ask, "rm", 1, 0, 0)
	if len(r.asked()) != 2 {
		t.Fatal("an answer for this call only allowed a later call")
	}
	if got := decidedBy(t, path); strings.Count(got, "user") != 6 || strings.Count(got, "policy") != 1 {
		t.Fatalf("decided by %s", got)
	}
}

// TestApprovalBatchAskedInParts: a batch larger than MaxListed is asked
// in parts, one question after another, each listing every call its
// answer decides: no call is decided by a question that did not list it.
func TestApprovalBatchAskedInParts(t *testing.T) {
	s, path := newGate(t, askAll)
	_, run := s.StartRun(context.Background(), fiveLines)
	r := &recorder{ans: Answer{Allow: true}}
	for _, err := range gathered(context.Background(), s, run, r.ask, "rm", MaxListed+3, MaxListed+3, 1) {
		if err != nil {
			t.Fatal(err)
		}
	}
	qs := r.asked()
	if len(qs) != 2 || len(qs[0].Calls) != MaxListed || len(qs[1].Calls) != 3 {
		t.Fatalf("asked %+v", qs)
	}
	listed := map[string]int{}
	for i, q := range qs {
		if q.Part != i+1 || q.Parts != 2 || q.Total != MaxListed+3 {
			t.Fatalf("question %d says part %d of %d, of %d calls", i+1, q.Part, q.Parts, q.Total)
		}
		for _, c := range q.Calls {
			listed[c.Arguments]++
		}
	}
	if len(listed) != MaxListed+3 {
		t.Fatalf("the questions listed %d different calls of %d: %v", len(listed), MaxListed+3, listed)
	}
	if got := decidedBy(t, path); strings.Count(got, "user") != MaxListed+3 {
		t.Fatalf("decided by %s", got)
	}
}

// twoServers asks about calm's echo and, by a rule of its own, wipe's hit.
var twoServers = Policy{Servers: map[string]Rules{
	"calm": {Tools: Lists{Ask: []string{"echo"}}, Source: "calm.json"},
	"wipe": {Tools: Lists{Ask: []string{"hit"}}, Source: "wipe.json"},
}}

// call is one gathered call: its target and its arguments.
type call struct {
	target protocol.Target
	args   string
}

// gatherCalls makes calls in run at once, as one batch (id) of their
// number, all from line 1; it returns their errors.
func gatherCalls(ctx context.Context, s *Session, run *Run, a Asker, id int64, calls []call) []error {
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := Request{Target: c.target, Params: json.RawMessage(`{"arguments":` + c.args + `}`), Ask: a, Run: run, Line: 1,
				Batch: Batch{ID: id, Size: len(calls)}}
			_, errs[i] = s.Through(ctx, req, (&fakeUpstream{res: `{}`}).do)
		}()
	}
	wg.Wait()
	return errs
}

// hiddenNinth is issue 30's gather: eight calls of calm's echo and a
// ninth of wipe's hit.
func hiddenNinth() []call {
	var calls []call
	for i := range 8 {
		calls = append(calls, call{protocol.Target{Kind: "tool", Server: "calm", Name: "echo"}, fmt.Sprintf(`{"message":"m%d"}`, i)})
	}
	return append(calls, call{protocol.Target{Kind: "tool", Server: "wipe", Name: "hit"}, `{"x":"HIDDEN-DROP-ALL-TABLES"}`})
}

// TestApprovalHiddenNinth (issue 30): eight gathered calls of one server
// and a ninth of another, under its own rule, answered once, for the
// cell and for the session. Every call allowed was listed, with its own
// rule, in a question the user allowed; the session answer to a question
// that did not list the ninth's tool does not cover it, now or later.
func TestApprovalHiddenNinth(t *testing.T) {
	for _, scope := range []Scope{Once, ForCell, ForSession} {
		s, path := newGate(t, twoServers)
		ctx := context.Background()
		_, run := s.StartRun(ctx, "await gather()\n")
		r := &recorder{ans: Answer{Allow: true, Scope: scope}}
		for i, err := range gatherCalls(ctx, s, run, r.ask, 1, hiddenNinth()) {
			if err != nil {
				t.Fatalf("scope %d: call %d: %v", scope, i, err)
			}
		}
		shown := map[string]string{}
		for _, q := range r.asked() {
			for _, c := range q.Calls {
				shown[c.Target.Server+"."+c.Target.Name+" "+c.Arguments] = c.Rule
			}
		}
		for _, c := range hiddenNinth() {
			rule := fmt.Sprintf(`rule tools.ask %q of server %q in %s.json`, c.target.Name, c.target.Server, c.target.Server)
			if got, ok := shown[c.target.Server+"."+c.target.Name+" "+c.args]; !ok || got != rule {
				t.Fatalf("scope %d: %s.%s %s ran, shown with rule %q (listed: %v); want %q", scope, c.target.Server, c.target.Name, c.args, got, ok, rule)
			}
		}
		if got := decidedBy(t, path); got != strings.Repeat("user,", 8)+"user" {
			t.Fatalf("scope %d: decided by %s", scope, got)
		}
	}

	// For the session, but the question that lists the ninth is declined:
	// the ninth is denied, and a later call of its tool is asked again.
	s, _ := newGate(t, twoServers)
	ctx := context.Background()
	_, run := s.StartRun(ctx, "await gather()\n")
	var mu sync.Mutex
	var asked []Question
	selective := func(_ context.Context, q Question) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		for _, c := range q.Calls {
			if c.Target.Server == "wipe" {
				return Answer{Reason: "declined"}, nil
			}
		}
		return Answer{Allow: true, Scope: ForSession}, nil
	}
	errs := gatherCalls(ctx, s, run, selective, 1, hiddenNinth())
	for i, err := range errs[:8] {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if !errors.Is(errs[8], ErrNotApproved) {
		t.Fatalf("the ninth: %v", errs[8])
	}
	_, run2 := s.StartRun(ctx, "x\n")
	if err := gatherCalls(ctx, s, run2, selective, 0, hiddenNinth()[8:])[0]; !errors.Is(err, ErrNotApproved) || len(asked) != 3 {
		t.Fatalf("the ninth's tool later: %v, asked %d questions", err, len(asked))
	}
}

// TestApprovalPartsBudget: calls with long arguments are asked in parts
// of about MaxQuestionBytes, each call in exactly one question.
func TestApprovalPartsBudget(t *testing.T) {
	s, _ := newGate(t, askAll)
	_, run := s.StartRun(context.Background(), fiveLines)
	r := &recorder{ans: Answer{Allow: true}}
	var calls []call
	for i := range 6 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"i":%d`, i)
		for k := range 10 {
			fmt.Fprintf(&b, `,"k%d":%q`, k, strings.Repeat("x", 150))
		}
		calls = append(calls, call{tool("rm"), b.String() + "}"})
	}
	for _, err := range gatherCalls(context.Background(), s, run, r.ask, 1, calls) {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, q := range r.asked() {
		size := 0
		for _, c := range q.Calls {
			size += len(c.Target.Server) + len(c.Target.Name) + len(c.Arguments) + len(c.Rule)
			if seen[c.Arguments] {
				t.Fatalf("a call asked about twice: %s", c.Arguments)
			}
			seen[c.Arguments] = true
		}
		if size > MaxQuestionBytes || len(q.Calls) > MaxListed {
			t.Fatalf("a question of %d calls, %d bytes", len(q.Calls), size)
		}
	}
	if len(seen) != 6 || len(r.asked()) < 2 {
		t.Fatalf("%d calls in %d questions", len(seen), len(r.asked()))
	}
}

// TestApprovalPartsAnswers: an answer for the cell to the first part lets
// the later parts' calls of its tools through unasked, and asks about
// the other tools; a decline of the first part denies the rest of the
// batch unasked, saying so.
func TestApprovalPartsAnswers(t *testing.T) {
	s, path := newGate(t, askAll)
	ctx := context.Background()
	_, run := s.StartRun(ctx, fiveLines)
	var calls []call
	for i := range MaxListed + 2 {
		calls = append(calls, call{tool("rm"), fmt.Sprintf(`{"i":%d}`, i)})
	}
	calls = append(calls, call{tool("wipe"), `{"i":0}`})
	forCell := &recorder{ans: Answer{Allow: true, Scope: ForCell}}
	for _, err := range gatherCalls(ctx, s, run, forCell.ask, 1, calls) {
		if err != nil {
			t.Fatal(err)
		}
	}
	qs := forCell.asked()
	if len(qs) != 2 || len(qs[0].Calls) != MaxListed || qs[0].Calls[0].Target.Name != "rm" || len(qs[1].Calls) != 1 || qs[1].Calls[0].Target.Name != "wipe" {
		t.Fatalf("asked %+v", qs)
	}
	if got := decidedBy(t, path); strings.Count(got, "cell") != 2 || strings.Count(got, "user") != MaxListed+1 {
		t.Fatalf("decided by %s", got)
	}

	_, run2 := s.StartRun(ctx, fiveLines)
	decline := &recorder{ans: Answer{Reason: "declined"}}
	errs := gatherCalls(ctx, s, run2, decline.ask, 1, calls)
	if len(decline.asked()) != 1 {
		t.Fatalf("a declined part: asked %d questions", len(decline.asked()))
	}
	rest := 0
	for i, err := range errs {
		if !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "the user declined") {
			t.Fatalf("call %d: %v", i, err)
		}
		if strings.Contains(err.Error(), "the rest of the batch was not asked about") {
			rest++
		}
	}
	if rest != 3 {
		t.Fatalf("%d calls say they were denied unasked, want 3", rest)
	}
}

// TestApprovalPartsHostOrder: which calls share a question is the host's
// choice: the same calls in any order of arrival make the same parts.
func TestApprovalPartsHostOrder(t *testing.T) {
	var ms []*member
	for i := range 2*MaxListed + 1 {
		c := AskedCall{Target: tool([]string{"rm", "wipe", "add"}[i%3]), Arguments: fmt.Sprintf(`{"i":%d}`, i), Line: i % 4}
		ms = append(ms, &member{key: toolKey(c.Target), call: c})
	}
	parts := func(ms []*member) string {
		ms = slices.Clone(ms)
		slices.SortStableFunc(ms, hostOrder)
		var b strings.Builder
		for _, p := range split(ms) {
			for _, m := range p {
				b.WriteString(m.call.Target.Name + m.call.Arguments + " ")
			}
			b.WriteString("| ")
		}
		return b.String()
	}
	want := parts(ms)
	slices.Reverse(ms)
	if got := parts(ms); got != want {
		t.Fatalf("reversed arrival:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(want, "|") != 3 {
		t.Fatalf("parts: %s", want)
	}
}

// TestApprovalScopes: "for this cell" covers the later calls of the cell
// and not the next cell's; "for the session" covers the next cell's too;
// a decline denies the whole batch with the user's reason.
func TestApprovalScopes(t *testing.T) {
	s, path := newGate(t, askAll)
	ctx := context.Background()
	_, cell1 := s.StartRun(ctx, fiveLines)
	forCell := &recorder{ans: Answer{Allow: true, Scope: ForCell}}
	for _, err := range gathered(ctx, s, cell1, forCell.ask, "rm", 5, 5, 1) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range gathered(ctx, s, cell1, forCell.ask, "rm", 3, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(forCell.asked()); n != 1 {
		t.Fatalf("for this cell: asked %d times in the cell", n)
	}
	_, cell2 := s.StartRun(ctx, fiveLines)
	_ = gathered(ctx, s, cell2, forCell.ask, "rm", 1, 0, 0)
	if n := len(forCell.asked()); n != 2 {
		t.Fatalf("for this cell: the next cell was not asked (%d questions)", n)
	}
	if got := decidedBy(t, path); got != "user,user,user,user,user,cell,cell,cell,user" {
		t.Fatalf("decided by %s", got)
	}

	decline := &recorder{ans: Answer{Reason: "declined"}}
	for i, err := range gathered(ctx, s, cell2, decline.ask, "wipe", 5, 5, 2) {
		var de *DeniedError
		if !errors.As(err, &de) || !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "the user declined") {
			t.Fatalf("declined call %d: %v", i, err)
		}
	}
	if n := len(decline.asked()); n != 1 {
		t.Fatalf("decline: asked %d times", n)
	}

	forSession := &recorder{ans: Answer{Allow: true, Scope: ForSession}}
	_ = gathered(ctx, s, cell2, forSession.ask, "wipe", 2, 2, 3)
	_, cell3 := s.StartRun(ctx, fiveLines)
	if err := gathered(ctx, s, cell3, forSession.ask, "wipe", 1, 0, 0)[0]; err != nil || len(forSession.asked()) != 1 {
		t.Fatalf("for the session: %v, asked %d times", err, len(forSession.asked()))
	}
}

// TestApprovalBatchLie: a runtime that says a batch is larger than it
// sends delays only its own calls: a member waits for the rest the
// approval timeout (exactly, under a fake clock: testing/synctest), then
// is asked about with the members that came; a straggler of that batch
// asks alone at once; and the cell's end stops the wait.
func TestApprovalBatchLie(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newGate(t, askAll)
		ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour) // a failure guard
		defer cancel()
		_, run := s.StartRun(ctx, fiveLines)
		r := &recorder{ans: Answer{Allow: true}}
		start := time.Now()
		if err := gathered(ctx, s, run, r.ask, "rm", 1, 1000, 5)[0]; err != nil || len(r.asked()) != 1 || len(r.asked()[0].Calls) != 1 {
			t.Fatalf("a lie about the size: %v, asked %+v", err, r.asked())
		}
		if waited := time.Since(start); waited != s.g.cfg.ApprovalTimeout {
			t.Fatalf("the batch was waited for %v; want the approval timeout, %v", waited, s.g.cfg.ApprovalTimeout)
		}
		start = time.Now()
		if err := gathered(ctx, s, run, r.ask, "rm", 1, 1000, 5)[0]; err != nil || len(r.asked()) != 2 {
			t.Fatalf("a straggler of a batch asked about: %v, asked %d times", err, len(r.asked()))
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("a straggler waited %v", waited)
		}

		cellCtx, endCell := context.WithCancel(ctx)
		done := make(chan []error)
		go func() { done <- gathered(cellCtx, s, run, r.ask, "rm", 2, 1000, 6) }()
		synctest.Wait() // both members wait for the batch
		run.approvals.mu.Lock()
		f := run.approvals.batches[6]
		formed := f != nil && len(f.members) == 2
		run.approvals.mu.Unlock()
		if !formed {
			t.Fatal("the two members of batch 6 are not waiting in it")
		}
		endCell()
		for i, err := range <-done {
			if err == nil || !strings.Contains(err.Error(), "context canceled") {
				t.Fatalf("call %d after the cell ended: %v", i, err)
			}
		}
		if ctx.Err() != nil || len(r.asked()) != 2 {
			t.Fatalf("the cell's end did not stop the wait (asked %d times)", len(r.asked()))
		}
	})
}

// TestApprovalBatchesBounded: a cell keeps count of at most maxForming
// batches; a request of any further one is asked about alone, at once.
func TestApprovalBatchesBounded(t *testing.T) {
	s, _ := newGate(t, askAll)
	_, run := s.StartRun(context.Background(), fiveLines)
	for id := range int64(maxForming) {
		run.approvals.arrive(Batch{ID: id + 1, Size: 2}, nil)
	}
	r := &recorder{ans: Answer{Allow: true}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard
	defer cancel()
	if err := gathered(ctx, s, run, r.ask, "rm", 1, 2, maxForming+1)[0]; err != nil || len(r.asked()) != 1 {
		t.Fatalf("a batch past the bound: %v, asked %d times", err, len(r.asked()))
	}
}

// TestApprovalWaitsForQuestionOut: a call of a tool about which a
// question is out in the cell waits for its answer instead of asking
// too; "for this cell" then lets it pass, "this call only" asks again.
func TestApprovalWaitsForQuestionOut(t *testing.T) {
	for _, c := range []struct {
		scope Scope
		asked int
		by    string
	}{{ForCell, 1, "cell,user"}, {Once, 2, "user,user"}} {
		s, path := newGate(t, askAll)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard
		_, run := s.StartRun(ctx, fiveLines)
		var mu sync.Mutex
		asked, second := 0, make(chan []error, 1)
		var ask Asker
		ask = func(_ context.Context, q Question) (Answer, error) {
			mu.Lock()
			asked++
			first := asked == 1
			mu.Unlock()
			if first { // a second call comes while this question is out
				go func() { second <- gathered(ctx, s, run, ask, "rm", 1, 0, 0) }()
				for !queued(run, 1) && ctx.Err() == nil {
					runtime.Gosched()
				}
			}
			return Answer{Allow: true, Scope: c.scope}, nil
		}
		if err := gathered(ctx, s, run, ask, "rm", 1, 0, 0)[0]; err != nil {
			t.Fatal(err)
		}
		if errs := <-second; errs[0] != nil || ctx.Err() != nil {
			t.Fatalf("the second call: %v (%v)", errs[0], ctx.Err())
		}
		cancel()
		mu.Lock()
		by := strings.Split(decidedBy(t, path), ",")
		slices.Sort(by) // the two are audited in either order
		if asked != c.asked || strings.Join(by, ",") != c.by {
			t.Errorf("scope %d: asked %d times, decided by %s", c.scope, asked, decidedBy(t, path))
		}
		mu.Unlock()
	}
}

// queued reports whether n requests of run wait for a question out.
func queued(run *Run, n int) bool {
	run.approvals.mu.Lock()
	defer run.approvals.mu.Unlock()
	return run.approvals.queued == n
}

// TestCodeAround: the code of a question is the lines around the call's
// line, each cut with its size, what is left out counted, the call's line
// marked; an unknown or false line shows the head; nothing that does not
// print reaches the question raw.
func TestCodeAround(t *testing.T) {
	var code strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&code, "x%d = %d\n", i, i)
	}
	got := codeAround(code.String(), []AskedCall{{Line: 10}})
	want := `The cell's code, line 10 of 20:
    … (6 lines, 42 bytes above)
   7 | x7 = 7
   8 | x8 = 8
   9 | x9 = 9
> 10 | x10 = 10
  11 | x11 = 11
  12 | x12 = 12
  13 | x13 = 13
    … (7 lines, 63 bytes more)`
	if got != want {
		t.Fatalf("around line 10:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range []int{0, -3, 21, 1 << 40} {
		got = codeAround(code.String(), []AskedCall{{Line: line}})
		if !strings.HasPrefix(got, "The cell's code (20 lines; the line of the call is not known):\n  1 | x1 = 1") || strings.Contains(got, ">") ||
			!strings.HasSuffix(got, "(13 lines, 113 bytes more)") {
			t.Fatalf("line %d:\n%s", line, got)
		}
	}

	hostile := "ok = 1\nprint('\x1b]52;c;AAAA\x07\u202egnp.exe\r')\r\n" + strings.Repeat("é", 200) + "\n"
	got = codeAround(hostile, []AskedCall{{Line: 2}})
	for _, r := range got {
		if r != '\n' && (r < 0x20 || r == 0x7f || r == 0x202e) {
			t.Fatalf("a character that does not print came through (%U):\n%s", r, got)
		}
	}
	if !strings.Contains(got, `> 2 | print('\u001b]52;c;AAAA\u0007\u202egnp.exe\u000d')`) || !strings.Contains(got, "é… (400 bytes)") ||
		strings.Count(got, "é") != maxCodeLine/2 {
		t.Fatalf("escaped and cut:\n%s", got)
	}
	if codeAround("", []AskedCall{{Line: 1}}) != "" {
		t.Fatal("no code, yet an excerpt")
	}
}

// TestApprovalBatchUnasked: a member that failed before the gate (its
// server did not start) counts towards its batch: the others are asked
// about at once, not after the approval timeout.
func TestApprovalBatchUnasked(t *testing.T) {
	s, _ := newGate(t, askAll)
	s.g.cfg.ApprovalTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard
	defer cancel()
	_, run := s.StartRun(ctx, fiveLines)
	r := &recorder{ans: Answer{Allow: true}}
	run.Unasked(Batch{ID: 4, Size: 3})
	for _, err := range gathered(ctx, s, run, r.ask, "rm", 2, 3, 4) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if qs := r.asked(); len(qs) != 1 || len(qs[0].Calls) != 2 {
		t.Fatalf("asked %+v", qs)
	}
	(*Run)(nil).Unasked(Batch{ID: 1, Size: 2}) // no cell: nothing to count
}
