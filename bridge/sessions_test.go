package bridge

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A request's principal is its verified token's holder, else the local
// user (stdio, exec, HTTP without tokens).
func TestPrincipalOf(t *testing.T) {
	if p := principalOf(nil); !p.IsLocal() {
		t.Fatalf("no extra: %v", p)
	}
	if p := principalOf(&mcp.RequestExtra{}); !p.IsLocal() {
		t.Fatalf("no token: %v", p)
	}
	p := principalOf(&mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "alice"}})
	if p.IsLocal() || p.String() != "token:alice" || p.Key() != "t-alice" {
		t.Fatalf("alice's token: %v %q", p, p.Key())
	}
}
