package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDetachedRunQuestions: questions queued together go out in one
// round; an answer reaches its asker; a question left unanswered is asked
// again, and one whose asker gave up is not.
func TestDetachedRunQuestions(t *testing.T) {
	var trips roundTrips
	ss := &mcp.ServerSession{}
	r := trips.add(ss, func() {})
	type got struct {
		a   mcp.InputResponse
		err error
	}
	ask := func(ctx context.Context, msg string) chan got {
		ch := make(chan got, 1)
		go func() {
			a, err := r.ask(ctx, &mcp.ElicitParams{Message: msg})
			ch <- got{a, err}
		}()
		return ch
	}
	first := ask(context.Background(), "first")
	res := r.inputRequired(<-r.asks)
	if len(res.InputRequests) != 1 || res.RequestState != r.id || len(res.Content) != 0 {
		t.Fatalf("first round: %+v", res)
	}
	giveUp, stop := context.WithCancel(context.Background())
	second, third := ask(context.Background(), "second"), ask(giveUp, "third")
	// Both questions reach the round together with the unanswered first.
	var ids []string
	for len(ids) < 3 {
		res = r.inputRequired(<-r.asks)
		ids = ids[:0]
		for id := range res.InputRequests {
			ids = append(ids, id)
		}
	}
	answers := mcp.InputResponseMap{}
	for id, q := range res.InputRequests {
		if q.(*mcp.ElicitParams).Message != "third" {
			answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q": q.(*mcp.ElicitParams).Message}}
		}
	}
	stop()
	if g := <-third; g.err == nil {
		t.Fatal("the asker that gave up got an answer")
	}
	if left := r.answer(answers); left {
		t.Fatal("a question whose asker gave up is still waiting")
	}
	for _, ch := range []chan got{first, second} {
		g := <-ch
		if g.err != nil || g.a.(*mcp.ElicitResult).Action != "accept" {
			t.Fatalf("an answered question: %+v", g)
		}
	}
	if res := r.inputRequired(nil); len(res.InputRequests) != 0 {
		t.Fatalf("answered questions asked again: %+v", res.InputRequests)
	}
}

// TestResumeUnknownState: a call with a request state codebridge does not
// have (or another session's) gets an error saying to run the code again,
// and, for a continuation that reached the wrong replica, how to route.
func TestResumeUnknownState(t *testing.T) {
	b := &Bridge{single: &session{}, reg: noClients()}
	b.trips = &b.reg.trips
	b.single.host = newSandboxHost(nil, nil)
	ss := &mcp.ServerSession{}
	other := b.trips.add(&mcp.ServerSession{}, func() {})
	for _, state := range []string{"cb-nope", other.id} {
		req := &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Name: ToolName, RequestState: state}}
		res, err := b.runPython(context.Background(), req)
		if err != nil || !res.IsError {
			t.Fatalf("state %q: %+v, %v", state, res, err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "run the code again") || !strings.Contains(text, "Mcp-Param-Session") {
			t.Fatalf("state %q: %+v, %v", state, res, err)
		}
	}
}

// TestAnswerForms: a sampling answer in the newer protocol's form (a list
// of contents) is taken as the older one the upstream expects.
func TestAnswerForms(t *testing.T) {
	r, err := asCreateMessageResult(&mcp.CreateMessageWithToolsResult{Model: "m", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil)
	if err != nil || r.Model != "m" || r.Content.(*mcp.TextContent).Text != "hi" {
		t.Fatalf("%+v, %v", r, err)
	}
	if _, err := asCreateMessageResult(&mcp.CreateMessageWithToolsResult{}, nil); err == nil {
		t.Fatal("an answer with no content was taken")
	}
	if _, err := asElicitResult(&mcp.ListRootsResult{}, nil); err == nil {
		t.Fatal("roots taken as an elicitation's answer")
	}
}

// TestAbandonedQuestionsDeclined: a new call arriving while an earlier
// run waits on questions no call carries declines them (an approval as a
// declined elicitation, a sampling request as an error), the earlier
// run asks nothing more, and the new run's answer begins with a note
// that says so. A run whose questions a call still carries is left alone.
func TestAbandonedQuestionsDeclined(t *testing.T) {
	var trips roundTrips
	ss := &mcp.ServerSession{}
	old := trips.add(ss, func() {})
	type got struct {
		a   mcp.InputResponse
		err error
	}
	ask := func(q mcp.InputRequest) chan got {
		ch := make(chan got, 1)
		go func() {
			a, err := old.ask(context.Background(), q)
			ch <- got{a, err}
		}()
		return ch
	}
	approval := ask(&mcp.ElicitParams{Message: "may I?"})
	old.inputRequired(<-old.asks)
	sampling := ask(&mcp.CreateMessageParams{})
	old.inputRequired(<-old.asks)

	old.setWaiting(context.Background(), nil) // a call carries them: left alone
	if n := trips.declineAbandoned(ss, nil); n != 0 {
		t.Fatalf("declined %d questions a call still carries", n)
	}
	old.clearWaiting()
	if n := trips.declineAbandoned(&mcp.ServerSession{}, nil); n != 0 {
		t.Fatalf("another session's call declined %d questions", n)
	}
	if n := trips.declineAbandoned(ss, nil); n != 2 {
		t.Fatalf("declined %d questions, want 2", n)
	}
	if g := <-approval; g.err != nil || g.a.(*mcp.ElicitResult).Action != "decline" {
		t.Fatalf("the approval: %+v", g)
	}
	if g := <-sampling; !errors.Is(g.err, errAbandoned) {
		t.Fatalf("the sampling request: %+v", g)
	}
	if _, err := old.ask(context.Background(), &mcp.ElicitParams{}); !errors.Is(err, errAbandoned) {
		t.Fatalf("the abandoned run asked again: %v", err)
	}
	res := withNote(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42\n"}}}, fmt.Sprintf(abandonedNote, 2))
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "2 question(s)") || !strings.Contains(text, "declined") {
		t.Fatalf("the note: %q", text)
	}
}

// TestAbandonedResultDropped: a finished run's result that no call
// collects is kept for abandonAfter, then dropped; one a call collected
// is not timed at all.
func TestAbandonedResultDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var trips roundTrips
		ss := &mcp.ServerSession{}
		left := trips.add(ss, func() {})
		trips.finish(left, &mcp.CallToolResult{})
		time.Sleep(abandonAfter - time.Nanosecond)
		if trips.get(left.id, ss) == nil {
			t.Fatal("the result was dropped before abandonAfter")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if trips.get(left.id, ss) != nil {
			t.Fatal("an uncollected result outlived abandonAfter")
		}

		taken := trips.add(ss, func() {})
		taken.collected = true
		trips.finish(taken, &mcp.CallToolResult{})
		if taken.abandon != nil {
			t.Fatal("a collected result was set to be dropped")
		}
	})
}
