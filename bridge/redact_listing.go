package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/codebridge/codebridge/internal/protocol"
)

// The listings the sandbox asks for (list_tools, search_tools, the pages
// of resources, resource templates and prompts) carry what upstreams chose
// to say about what they offer: titles, descriptions, schemas with their
// descriptions, examples and defaults. A careless or hostile upstream can
// put personal data or the value of its own env or header there, so each
// listing is redacted by the session's gate before the sandbox reads it,
// here, once for all of them (the methods table of rpc.go names which
// answers are listings).
//
// A tool's name is the exception: a call must name a listed tool exactly
// (bridge/gate.go, listed), and the gate checks the name before it puts
// any value back, so a token cannot stand in for it. A name stays exact
// when redaction would leave it as it is; a tool whose name redaction
// would change (a secret's value, personal data, a value the session has
// a token for, in any form the redaction looks through) is left out of
// the listing instead: its name would show the model what it must not
// see, and the sandbox cannot call what it cannot name.

// listing says how a listing answer is redacted.
type listing struct {
	// entries: the answer is an array of entries, each redacted but for
	// its name and its own fields; false: every string of the answer is
	// redacted (a page of resources or prompts, whose names and URIs the
	// gate puts values back into when the sandbox reads one).
	entries bool
	// name is the field of an entry that holds the name a call gives
	// exactly, or "" when the entry has none.
	name func(entry map[string]json.RawMessage) string
	// own are fields that are codebridge's, not the upstream's (a
	// server's name in the config): they stay as they are.
	own []string
}

var (
	// toolListing is list_tools: tools and denied tools, by name.
	toolListing = &listing{entries: true, name: func(map[string]json.RawMessage) string { return "name" }}
	// searchListing is search_tools: a tool or skill hit gives its name
	// in "tool"; a resource, template or prompt hit (it has a "kind") is
	// redacted whole, as its own listing is.
	searchListing = &listing{entries: true, own: []string{"server"}, name: func(e map[string]json.RawMessage) string {
		if _, other := e["kind"]; other {
			return ""
		}
		return "tool"
	}}
	// pageListing is a page of resources, resource templates or prompts.
	pageListing = &listing{}
)

// redacted is m, whose answer is a listing, with that answer redacted as
// l says before the sandbox reads it, and its error redacted too.
func redacted(l *listing, m method) method {
	return func(ctx context.Context, c *call, rpc protocol.RPC) (json.RawMessage, error) {
		val, err := m(ctx, c, rpc)
		if c.gate == nil {
			return val, err
		}
		if err != nil { // it can quote the upstream (a failed tools/list)
			return nil, c.gate.RedactError(err)
		}
		red := c.gate.RedactJSON(val)
		if !l.entries || bytes.Equal(red, val) { // nothing to hide, names included
			return red, nil
		}
		out, withheld, err := c.redactEntries(l, val)
		if withheld > 0 && l == toolListing {
			var p protocol.ListToolsParams
			_ = json.Unmarshal(rpc.Params, &p)
			c.log.Warn("server lists tools whose names hold a secret or personal data, so the sandbox is not shown them; rename them in the server, or narrow the \"redact\" patterns", "server", p.Server, "tools", withheld)
		}
		return out, err
	}
}

// redactEntries redacts each entry of a listing but for the fields l
// keeps, in one pass of the gate over them all, and leaves out an entry
// whose name would change, and says how many it left out.
func (c *call) redactEntries(l *listing, val json.RawMessage) (json.RawMessage, int, error) {
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(val, &entries); err != nil {
		return nil, 0, fmt.Errorf("codebridge made a listing for the sandbox that is not an array of objects (%w): a bug, please report it", err)
	}
	kept := make([]map[string]json.RawMessage, len(entries))
	names := make([]string, len(entries)) // the field of each entry's name
	for i, e := range entries {
		names[i], kept[i] = l.name(e), map[string]json.RawMessage{}
		for _, k := range append([]string{names[i]}, l.own...) {
			if v, ok := e[k]; ok && k != "" {
				kept[i][k] = v
				delete(e, k)
			}
		}
	}
	rest, err := json.Marshal(entries)
	if err != nil {
		return nil, 0, err
	}
	var red []map[string]json.RawMessage // decoded afresh: a key redaction changed is not kept
	if err := json.Unmarshal(c.gate.RedactJSON(rest), &red); err != nil || len(red) != len(kept) {
		return nil, 0, fmt.Errorf("a listing for the sandbox, redacted, does not decode as it was made (%w): a bug in codebridge, please report it", err)
	}
	out := red[:0]
	withheld := 0
	for i, e := range red {
		if c.showsHidden(kept[i][names[i]]) {
			withheld++
			continue
		}
		for k, v := range kept[i] {
			e[k] = v
		}
		out = append(out, e)
	}
	var b bytes.Buffer // as the gate encodes what it redacts: <, > and & as they are
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, 0, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), withheld, nil
}

// showsHidden reports whether an entry's name (a JSON string; nil: the
// entry has none) is one the redaction would change.
func (c *call) showsHidden(raw json.RawMessage) bool {
	if raw == nil {
		return false
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return true // not a string: nothing a call could name
	}
	return c.gate.Redact(name) != name
}
