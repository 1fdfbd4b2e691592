package bridge

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inflight counts, per upstream server, the tool calls each MCP session
// has in flight. A request a shared server makes of its client (sampling,
// elicitation) carries no trace of the call it serves; when exactly one
// session has calls in flight to that server, the request is that
// session's.
type inflight struct {
	mu sync.Mutex
	n  map[string]map[*mcp.ServerSession]int
}

// begin counts a call of ss to server until end is called.
func (f *inflight) begin(server string, ss *mcp.ServerSession) (end func()) {
	if f == nil || ss == nil {
		return func() {}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]map[*mcp.ServerSession]int{}
	}
	if f.n[server] == nil {
		f.n[server] = map[*mcp.ServerSession]int{}
	}
	f.n[server][ss]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.n[server][ss]--; f.n[server][ss] == 0 {
			delete(f.n[server], ss)
		}
	}
}

// only is the one session with calls in flight to server, or nil when
// none or several have (then the request cannot be told apart).
func (f *inflight) only(server string) *mcp.ServerSession {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.n[server]) != 1 {
		return nil
	}
	for ss := range f.n[server] {
		return ss
	}
	return nil
}
