package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logSink is a Downstream that records the log messages it is given,
// with the call each was tied to.
type logSink struct {
	mu     sync.Mutex
	untied []string
	tied   map[string]string // data -> the call's mark
	got    chan struct{}     // one per message
}

func newLogSink() *logSink { return &logSink{tied: map[string]string{}, got: make(chan struct{}, 100)} }

// wait waits for n messages (the go-sdk may hand one to its handler after
// the answer of the call it came with).
func (l *logSink) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-l.got:
		case <-time.After(time.Minute): // a failure guard
			t.Fatal("a log message never reached the downstream")
		}
	}
}

func (l *logSink) CreateMessage(context.Context, string, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, ErrNoClient
}
func (l *logSink) Elicit(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, ErrNoClient
}
func (l *logSink) ListRoots(context.Context, string) (*mcp.ListRootsResult, error) {
	return nil, ErrNoClient
}
func (l *logSink) AnswersRoots(string) bool { return false }
func (l *logSink) Log(_ context.Context, _ string, p *mcp.LoggingMessageParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.untied = append(l.untied, p.Data.(string))
	l.got <- struct{}{}
}

// logTied records p as tied to the call marked mark.
func (l *logSink) logTied(mark string, p *mcp.LoggingMessageParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := p.Meta["progressToken"]; ok {
		panic("the call's progress token reached the caller")
	}
	l.tied[p.Data.(string)] = mark
	l.got <- struct{}{}
}

// markedCaller is the Caller of a call marked mark: the log messages tied to
// it go to sink. A slow one takes its time, as the bridge's handler may
// under load.
type markedCaller struct {
	sink *logSink
	mark string
	slow bool
}

func (c markedCaller) Progress(string, *mcp.ProgressNotificationParams) {}
func (c markedCaller) LogValue() slog.Value                             { return slog.GroupValue() }
func (c markedCaller) Log(_ string, p *mcp.LoggingMessageParams) {
	if c.slow {
		time.Sleep(200 * time.Millisecond) // a slow handler, not synchronisation: the call must wait for it
	}
	c.sink.logTied(c.mark, p)
}

// TestLogTiedToItsCall: a stdio server's log message written while one
// call is in flight is that call's; one written while two are is no
// call's.
func TestLogTiedToItsCall(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	spec := stubSpec("stub")
	spec.Env = map[string]string{"STUB_EVENTS": events}
	sink := newLogSink()
	p := newTestPool(t, Options{Downstream: sink}, spec)
	s, _ := p.Get("stub")
	ctx := context.Background()
	if _, err := s.Call(ctx, markedCaller{sink, "first", false}, "warn", json.RawMessage(`{"message":"alone"}`)); err != nil {
		t.Fatal(err)
	}
	sleeping := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), nil, "sleep", json.RawMessage(`{"seconds":60}`))
		sleeping <- err
	}()
	for { // wait until the stub has the sleep (polling a file it writes)
		if b, _ := os.ReadFile(events); strings.Contains(string(b), "sleep-started") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := s.Call(ctx, markedCaller{sink, "second", false}, "warn", json.RawMessage(`{"message":"crowded"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), nil, "wake", nil); err != nil {
		t.Fatal(err)
	}
	if err := <-sleeping; err != nil {
		t.Fatal(err)
	}
	sink.wait(t, 2)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.tied["alone"] != "first" {
		t.Fatalf("the message of the only call in flight: tied %v, untied %v", sink.tied, sink.untied)
	}
	if _, ok := sink.tied["crowded"]; ok || len(sink.untied) != 1 || sink.untied[0] != "crowded" {
		t.Fatalf("the message with two calls in flight: tied %v, untied %v", sink.tied, sink.untied)
	}
}

// TestRemoteLogTiedToItsCall: a remote server's log message sent on the
// event stream of a tool call's request is that call's, even with another
// call in flight; the server's own value under codebridge's key is
// removed.
func TestRemoteLogTiedToItsCall(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote"}, nil)
	release, holding := make(chan struct{}), make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "warn"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Message string }) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: in.Message, Meta: mcp.Meta{callKey: "codebridge-999"}})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "warned"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(holding)
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
	})
	// Stateless: such a server sends log messages at level info without
	// logging/setLevel, which codebridge does not send.
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer hs.Close()
	sink := newLogSink()
	p := newTestPool(t, Options{Downstream: sink}, discovery.Server{Name: "remote", URL: hs.URL, Source: "test"})
	s, _ := p.Get("remote")
	holdDone := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), nil, "hold", nil)
		holdDone <- err
	}()
	<-holding
	if _, err := s.Call(context.Background(), markedCaller{sink, "second", false}, "warn", json.RawMessage(`{"Message":"crowded"}`)); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-holdDone; err != nil {
		t.Fatal(err)
	}
	sink.wait(t, 1)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.tied["crowded"] != "second" || len(sink.untied) != 0 {
		t.Fatalf("the message of the second call: tied %v, untied %v", sink.tied, sink.untied)
	}
}

// TestLogHandledBeforeTheCallReturns: a log message tied to a stdio call
// is handled before the call returns (its cell's notes then have it), even
// when the handler is slow: the answer that follows it does not overtake it.
func TestLogHandledBeforeTheCallReturns(t *testing.T) {
	sink := newLogSink()
	p := newTestPool(t, Options{Downstream: sink}, stubSpec("stub"))
	s, _ := p.Get("stub")
	if _, err := s.Call(context.Background(), markedCaller{sink, "mine", true}, "warn", json.RawMessage(`{"message":"first"}`)); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.tied["first"] != "mine" {
		t.Fatalf("when the call returned its log message had not been handled: tied %v, untied %v", sink.tied, sink.untied)
	}
}
