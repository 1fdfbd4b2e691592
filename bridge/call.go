package bridge

import (
	"context"
	"encoding/json"
	"time"

	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/protocol"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call is one run_python call as its cell's requests see it: who made it
// and what watches it. It is made once, in [session.run], handed to the
// sandbox as the cell's [sandbox.Caller], and passed explicitly down the
// path of every request the cell makes (the methods of rpc.go, the gate,
// the upstream call): no context carries any of it.
type call struct {
	*sandboxHost                           // the session's host
	sbx          *sandbox.Session          // the sandbox the cell runs in: installs write into it
	client       *mcp.ServerSession        // the MCP session that made the call; nil: codebridge exec, tests
	run          *detachedRun              // the detached run it is, on the newer protocol (roundtrip.go); nil otherwise
	output       func(stream, text string) // sees the cell's output as it comes (progress); nil: nobody does
	shared       shares                    // the files the cell shared, for the call's result
	cell         *gate.Run                 // the gate's record of this call, which its requests name; nil without a gate
}

// Answer handles one request of the cell's runtime (rpc.go). Its error
// carries its kind (errkind.go), mapped here, once, for every method.
func (c *call) Answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	start := time.Now()
	val, err := c.answer(ctx, rpc)
	if c.metrics != nil {
		c.metrics.Request(rpc.Method, err, time.Since(start))
	}
	return val, err
}

func (c *call) answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	m, ok := methods[rpc.Method]
	if !ok {
		return nil, withKind(unknownMethod(rpc.Method))
	}
	if c.run != nil && c.trips != nil {
		c.trips.touch(c.run) // an upstream's question during this request is this call's
	}
	val, err := m(ctx, c, rpc)
	return val, withKind(err)
}

// Output passes a piece of the cell's output to the call's watcher, when
// it has one (progress notifications).
func (c *call) Output(stream, text string) {
	if c.output != nil {
		c.output(stream, text)
	}
}
