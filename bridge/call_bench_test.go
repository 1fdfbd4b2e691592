package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/shapes"
	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/codebridge/codebridge/internal/upstream"
)

// BenchmarkProxiedCall measures the host's share of one proxied call: a
// call_tool request of the runtime answered by the bridge (gate, shapes,
// upstream), to the stub server over stdio. "plain" has no gate and no
// shapes; "gated" has the gate doing everything (every kind of
// redaction, the audit log) and shapes kept in a state directory. The
// stub's own time (a Python process) is in both; allocs/op is the host's.
func BenchmarkProxiedCall(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is not installed")
	}
	stubPy, err := filepath.Abs("../testdata/servers/stub_server.py")
	if err != nil {
		b.Fatal(err)
	}
	for _, gated := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "gated"}[gated]
		b.Run(name, func(b *testing.B) {
			log := slog.New(slog.DiscardHandler)
			pool := upstream.NewPool([]discovery.Server{{Name: "stub", Command: "python3", Args: []string{stubPy}}}, upstream.Options{Log: log})
			defer pool.Close()
			h := newSandboxHost(pool, log)
			if gated {
				redactor, err := gate.NewRedactor([]string{"all"}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				audit, err := gate.OpenAudit(filepath.Join(b.TempDir(), "audit.jsonl"), false)
				if err != nil {
					b.Fatal(err)
				}
				defer audit.Close()
				h.gate = gate.New(gate.Config{Redactor: redactor, Audit: audit, Log: log}).NewSession()
				store := shapes.Open(statedir.Dir(b.TempDir()), log)
				defer store.Close()
				h.shapes = store.Book("")
			}
			c := &call{sandboxHost: h}
			ctx := context.Background()
			params, _ := json.Marshal(map[string]any{"server": "stub", "tool": "echo", "arguments": map[string]any{"message": `{"id": 7, "title": "ping"}`}})
			rpc := protocol.RPC{Method: protocol.MCallTool, Params: params}
			if _, err := c.Answer(ctx, rpc); err != nil { // starts the stub
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Answer(ctx, rpc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
