package bridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DropCancelledResponses wraps the transport the bridge serves on so that
// no response is sent for a request the client cancelled with
// notifications/cancelled, as the MCP specification asks. The go-sdk
// server (v1.8.0) cancels the handler but still writes its response
// (go-sdk issues #1235 and #1259; pull request #1267 would fix it there).
func DropCancelledResponses(t mcp.Transport) mcp.Transport { return cancelTransport{t} }

type cancelTransport struct{ mcp.Transport }

func (t cancelTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cancelConn{Connection: c, inFlight: map[jsonrpc.ID]bool{}}, nil
}

// cancelConn tracks the client's requests in flight, and whether each was
// cancelled; the response to a cancelled one is not written.
type cancelConn struct {
	mcp.Connection
	mu       sync.Mutex
	inFlight map[jsonrpc.ID]bool // request id -> cancelled
}

func (c *cancelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return msg, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.inFlight[req.ID] = false
		return msg, nil
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				if _, ok := c.inFlight[id]; ok {
					c.inFlight[id] = true
				}
			}
		}
	}
	return msg, nil
}

func (c *cancelConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cancelled := c.inFlight[resp.ID]
		delete(c.inFlight, resp.ID)
		c.mu.Unlock()
		if cancelled {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}
