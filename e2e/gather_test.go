package e2e

import (
	"testing"
)

// TestGatherThousandsNeverStalls: a cell that gathers a thousand calls,
// far more than may be in flight, finishes every time. (The host used to
// stop reading the runtime's frames while 64 were in flight; Podman's
// attach then stopped taking the container's stdin, which held the very
// answers that would free a slot, and the cell hung until its timeout.)
func TestGatherThousandsNeverStalls(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"everything": npmServer("mcp-server-everything")}}))
	code := `import asyncio
r = await asyncio.gather(*[mcp_everything.echo(message=str(i)) for i in range(1000)])
print(len(r), sum(str(i) in str(x) for i, x in enumerate(r)))`
	for i := range 10 {
		if got := b.ok(code, "timeout", 120); got != "1000 1000\n" {
			t.Fatalf("round %d: %q", i, got)
		}
	}
}
