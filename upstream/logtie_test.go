package upstream

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logSink is a Downstream that records the log messages it is given,
// with the call each was tied to.
type logSink struct {
	mu     sync.Mutex
	untied []string
	tied   map[string]string // data -> the call's mark
}

type markKey struct{}

func (l *logSink) CreateMessage(context.Context, string, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, ErrNoClient
}
func (l *logSink) Elicit(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, ErrNoClient
}
func (l *logSink) ListRoots(context.Context, string) (*mcp.ListRootsResult, error) {
	return nil, ErrNoClient
}
func (l *logSink) Log(_ context.Context, _ string, p *mcp.LoggingMessageParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.untied = append(l.untied, p.Data.(string))
}
func (l *logSink) LogCall(call context.Context, _ string, p *mcp.LoggingMessageParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := p.Meta["progressToken"]; ok {
		panic("the call's progress token reached the downstream")
	}
	l.tied[p.Data.(string)], _ = call.Value(markKey{}).(string)
}

// TestLogTiedToItsCall: a stdio server's log message written while one
// call is in flight is that call's; one written while two are is no
// call's.
func TestLogTiedToItsCall(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	spec := stubSpec("stub")
	spec.Env = map[string]string{"STUB_EVENTS": events}
	p := newTestPool(t, Options{}, spec)
	sink := &logSink{tied: map[string]string{}}
	p.SetDownstream(sink)
	s, _ := p.Get("stub")
	ctx := context.WithValue(context.Background(), markKey{}, "first")
	if _, err := s.Call(ctx, "warn", json.RawMessage(`{"message":"alone"}`)); err != nil {
		t.Fatal(err)
	}
	sleeping := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "sleep", json.RawMessage(`{"seconds":60}`))
		sleeping <- err
	}()
	for { // wait until the stub has the sleep (polling a file it writes)
		if b, _ := os.ReadFile(events); strings.Contains(string(b), "sleep-started") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx = context.WithValue(context.Background(), markKey{}, "second")
	if _, err := s.Call(ctx, "warn", json.RawMessage(`{"message":"crowded"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), "wake", nil); err != nil {
		t.Fatal(err)
	}
	if err := <-sleeping; err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.tied["alone"] != "first" {
		t.Fatalf("the message of the only call in flight: tied %v, untied %v", sink.tied, sink.untied)
	}
	if _, ok := sink.tied["crowded"]; ok || len(sink.untied) != 1 || sink.untied[0] != "crowded" {
		t.Fatalf("the message with two calls in flight: tied %v, untied %v", sink.tied, sink.untied)
	}
}
