package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
)

// countedParams are parameters of a request that acts on something, which
// count how often they are decoded.
type countedParams struct {
	URI       string          `json:"uri"`
	Arguments json.RawMessage `json:"arguments"`
}

var decodes int

func (p *countedParams) UnmarshalJSON(b []byte) error {
	decodes++
	type plain countedParams
	return json.Unmarshal(b, (*plain)(p))
}

func (p countedParams) Target() protocol.Target {
	return protocol.Target{Kind: "resource", Server: "mem", Name: p.URI}
}

// TestParamsDecodedOnce: a request's parameters, sent in any member order,
// are decoded once on the way through the gate, from the canonical form
// the gate shows, audits and sends; they are decoded again only when the
// gate put a private value back.
func TestParamsDecodedOnce(t *testing.T) {
	s := gate.New(gate.Config{}).NewSession()
	c := &call{sandboxHost: &sandboxHost{gate: s}}
	var got countedParams
	m := typed(func(_ context.Context, _ *call, p countedParams) (json.RawMessage, error) {
		got = p
		return json.RawMessage(`{}`), nil
	})
	decodes = 0
	if _, err := m(context.Background(), c, protocol.RPC{Params: json.RawMessage(`{"uri": "mem://a", "arguments": {"b": 1, "a": 2}}`)}); err != nil {
		t.Fatal(err)
	}
	if decodes != 1 || string(got.Arguments) != `{"a":2,"b":1}` {
		t.Fatalf("decoded %d times, arguments %s: want once, in canonical form", decodes, got.Arguments)
	}
}

var _ protocol.Targeted = countedParams{}
