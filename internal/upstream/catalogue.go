package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolCatalogue is a server's tool list: read from the server once per
// session and kept until the server says its tools changed
// (notifications/tools/list_changed) or it restarts. Its generation counts
// those changes; its exact lookup is how the gate refuses a tool the
// server does not list.
type toolCatalogue struct {
	sup   *supervisor
	list  sessionList[*mcp.Tool]
	saved *savedListing // where a list read is saved; nil: nowhere
}

// tools returns the server's tools, starting it when needed, for caller
// (nil: no one), who hears of a listing that failed. A list read from the
// server is saved too. The list cached for the live session is returned
// as it is, without a request's time limit (every tool call looks its
// tool up here).
func (t *toolCatalogue) tools(ctx context.Context, caller Caller) ([]*mcp.Tool, error) {
	if c := t.sup.live(); c != nil {
		if cached, _, ok := t.list.cached(c); ok {
			return cached, nil
		}
	}
	var tools []*mcp.Tool
	err := t.sup.run(ctx, caller, "listing tools", func(ctx context.Context, c *conn) error {
		cached, gen, ok := t.list.cached(c)
		if ok {
			tools = cached
			return nil
		}
		fresh := []*mcp.Tool{}
		for tool, err := range c.cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			fresh = append(fresh, tool)
		}
		if t.list.put(c, gen, fresh) && t.saved.keepTools(fresh) {
			t.list.moved() // the saved tools given out in their place were not these
		}
		tools = fresh
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tools, nil
}

// lookup returns the tool listed under exactly name (case and punctuation
// included), or nil when none is. A name missing from the kept list is
// looked for again in a fresh one, so that a tool added a moment ago
// (before its list_changed notification arrived) is found.
func (t *toolCatalogue) lookup(ctx context.Context, caller Caller, name string) (*mcp.Tool, error) {
	for fresh := false; ; fresh = true {
		tools, err := t.tools(ctx, caller)
		if err != nil {
			return nil, err
		}
		for _, tool := range tools {
			if tool.Name == name {
				return tool, nil
			}
		}
		if fresh {
			return nil, nil
		}
		t.list.forget(tools) // the list this lookup read: fetch it again
	}
}

// changed forgets the tools and counts a change: the server said its
// tools changed, or it restarted.
func (t *toolCatalogue) changed() { t.list.changed() }

// generation counts the changes to the tool list so far.
func (t *toolCatalogue) generation() uint64 { return t.list.generation() }
