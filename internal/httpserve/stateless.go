package httpserve

import (
	"encoding/json"
	"io"
	"iter"
	"net/http"

	"github.com/codebridge/codebridge/bridge"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Two protocols on one endpoint. A client on MCP 2026-07-28 or later
// (SEP-2575, SEP-2567) sends no initialize and keeps no Mcp-Session-Id:
// every request names its protocol version in the MCP-Protocol-Version
// header, and the go-sdk serves that protocol only from a stateless
// handler. Older clients (2025-11-25 and before) open a session with
// initialize and name it in Mcp-Session-Id on every later request, which
// only the stateful handler serves. /mcp routes each request by what its
// client speaks; authentication, the host and origin checks, the body
// deadline and the session limits come before the routing and apply to
// both.

// protocolVersionHeader names the protocol version of a request.
const protocolVersionHeader = "Mcp-Protocol-Version"

// statelessVersion is the first protocol version served statelessly.
const statelessVersion = "2026-07-28"

// speaksStateless reports whether r is a request of a client on the
// stateless protocol: it names a protocol version of 2026-07-28 or later
// (dates compare as strings) and no session. A request that names a
// session is the stateful handler's, which refuses a newer version.
func speaksStateless(r *http.Request) bool {
	return r.Header.Get(sessionIDHeader) == "" && r.Header.Get(protocolVersionHeader) >= statelessVersion
}

// route sends a request to the stateless handler or the stateful one by
// the protocol its client speaks.
func route(stateless, stateful http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if speaksStateless(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// serveStateless serves a request of who on the stateless protocol. A
// run_python call that names no session opens one (a handle), so it
// takes a place as a request that opens a session does, or is refused
// with the limit that leaves none; one that names a handle makes that
// session busy while it is served.
func (s *Server) serveStateless(w http.ResponseWriter, r *http.Request, h http.Handler, who string) {
	handle, opens := runPythonSession(r)
	switch {
	case opens:
		a := s.limit.reserve(who)
		if a.place == nil {
			s.opts.Metrics.Refused()
			s.refuseSession(w, r, a.hit, who, a.n)
			return
		}
		// The new handle counts from the moment it is live; the place is
		// held until the request ends.
		defer a.place.release()
		if a.ended != nil {
			_ = s.endToMakeRoom(who, a.hit, a.ended)
		}
	case handle != "":
		if done, ok := s.limit.use(who, bridge.HandleTag(handle)); ok {
			defer done()
		}
	}
	h.ServeHTTP(w, r)
}

// runPythonSession reads r's body, already read by readBody, for a
// run_python call: the session handle it names, or whether it opens a
// new session (it names none and continues no earlier call). The body is
// the client's: anything but one such call opens nothing here.
func runPythonSession(r *http.Request) (handle string, opens bool) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return "", false
	}
	rc, err := r.GetBody()
	if err != nil {
		return "", false
	}
	body, _ := io.ReadAll(rc)
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return "", false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" {
		return "", false
	}
	var p struct {
		Name         string `json:"name"`
		RequestState string `json:"requestState"`
		Arguments    struct {
			Session string `json:"session"`
		} `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.Name != bridge.ToolName {
		return "", false
	}
	return p.Arguments.Session, p.Arguments.Session == "" && p.RequestState == ""
}

// openHandles yields the tag of each live session handle, its
// principal, and whether a cell of it runs.
func (s *Server) openHandles() iter.Seq2[string, openHandle] {
	return func(yield func(string, openHandle) bool) {
		for _, i := range s.b.ListSessions("", true) {
			if !yield(i.Tag, openHandle{principal: i.Principal, running: i.Running}) {
				return
			}
		}
	}
}
