package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// tokenizer counts o200k_base tokens with the BPE ranks compiled into the
// binary (no download).
type tokenizer struct{ enc *tiktoken.Tiktoken }

func newTokenizer() (*tokenizer, error) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		return nil, fmt.Errorf("loading o200k_base: %w", err)
	}
	return &tokenizer{enc: enc}, nil
}

func (t *tokenizer) count(s string) int { return len(t.enc.EncodeOrdinary(s)) }

// countJSON counts the tokens of v encoded as compact JSON.
func (t *tokenizer) countJSON(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only values the bench built itself get here
	}
	return t.count(string(b))
}

// contextCost is the tools/list an agent pays for on every request,
// through codebridge and with the same upstreams wired in directly.
type contextCost struct {
	label       string
	tools       int // upstream tools
	direct      int // tokens of the upstreams' tools arrays, combined
	bridged     int // tokens of codebridge's tools array
	bridgedJSON string
}

// measureContext counts the tools/list tokens for (a) the three npm
// reference servers and (b) the generated 1,000-tool catalogue, and checks
// that codebridge's definition is byte-for-byte the same in both cases.
func (e *env) measureContext(ctx context.Context) ([]row, error) {
	npmServers := map[string]server{
		"everything": e.everything(),
		"filesystem": e.filesystem(e.tmp),
		"memory":     e.memory(e.path("context-memory.jsonl")),
	}
	a, err := e.contextCost(ctx, "3 npm reference servers", npmServers, "")
	if err != nil {
		return nil, err
	}
	b, err := e.contextCost(ctx, "generated catalogue", map[string]server{"catalogue": e.catalogue()},
		// The bridge really reaches all 1,000 tools, and calls one.
		`tools = await runtime.list_tools("catalogue")
r = await mcp_catalogue.invoice_create(amount=1200, currency="EUR")
print(len(tools), r)`)
	if err != nil {
		return nil, err
	}
	if b.tools != catalogueSize {
		return nil, fmt.Errorf("the catalogue serves %d tools, want %d", b.tools, catalogueSize)
	}
	same := "identical"
	if a.bridgedJSON != b.bridgedJSON {
		same = "DIFFERS"
	}
	def := row{
		name:   "run_python definition (tools/list)",
		value:  fmt.Sprintf("%d tokens, %d bytes", a.bridged, len(a.bridgedJSON)),
		spread: same + " with 3 or 1,000 upstream tools",
		target: "≤ 150 tokens, whatever is configured",
		ok:     a.bridged <= 150 && same == "identical",
	}
	rows := []row{def}
	for _, c := range []contextCost{a, b} {
		rows = append(rows, row{
			name:   fmt.Sprintf("Context: %s (%s tools)", c.label, commas(c.tools)),
			value:  fmt.Sprintf("%s → %d tokens (−%.1f%%)", commas(c.direct), c.bridged, 100*(1-float64(c.bridged)/float64(c.direct))),
			spread: "exact count",
			target: "direct → codebridge",
			ok:     true,
			info:   true,
		})
	}
	return rows, nil
}

// contextCost lists the tools of servers directly and through a bridge
// configured with them. check, when set, is run through the bridge first
// and must print the number of tools.
func (e *env) contextCost(ctx context.Context, label string, servers map[string]server, check string) (contextCost, error) {
	c := contextCost{label: label}
	var all []*mcp.Tool
	for name, s := range servers {
		cs, err := direct(ctx, s)
		if err != nil {
			return c, err
		}
		tools, err := listTools(ctx, cs)
		cs.Close()
		if err != nil {
			return c, fmt.Errorf("%s tools/list: %w", name, err)
		}
		all = append(all, tools...)
	}
	c.tools = len(all)
	c.direct = e.tok.countJSON(all)

	cfg, err := e.writeConfig("context-"+fmt.Sprint(len(servers))+".json", servers)
	if err != nil {
		return c, err
	}
	b, err := e.startBridge(ctx, cfg)
	if err != nil {
		return c, err
	}
	defer b.close()
	res, err := b.cs.ListTools(ctx, nil)
	if err != nil {
		return c, err
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "run_python" {
		return c, fmt.Errorf("codebridge lists %d tools, want only run_python", len(res.Tools))
	}
	js, _ := json.Marshal(res.Tools)
	c.bridgedJSON = string(js)
	c.bridged = e.tok.count(c.bridgedJSON)
	if check != "" {
		out, err := b.run(ctx, check)
		if err != nil {
			return c, err
		}
		var n int
		if _, err := fmt.Sscan(out, &n); err != nil || n != c.tools {
			return c, fmt.Errorf("through codebridge the %s has %q tools, want %d", label, out, c.tools)
		}
	}
	return c, nil
}
