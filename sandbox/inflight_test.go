package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
)

// TestRuntimeKeepsTheInFlightBound: the runtime waits for a slot before it
// sends a request, with the host's bound: were the runtime's larger, the
// host would refuse its requests; were it missing, a gathering cell could
// stall on an engine whose attach couples stdin to stdout.
func TestRuntimeKeepsTheInFlightBound(t *testing.T) {
	src, err := os.ReadFile("../pyruntime/mcp/_channel.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MAX_IN_FLIGHT = (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("pyruntime/mcp/_channel.py states no MAX_IN_FLIGHT")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != MaxInFlight {
		t.Fatalf("the runtime's MAX_IN_FLIGHT is %d, the host's MaxInFlight %d", n, MaxInFlight)
	}
}

// TestHostRefusesRequestsBeyondTheBound: a runtime that does not wait for
// a slot (code that writes raw frames) gets at most MaxInFlight requests
// worked on; the next is refused at once with an error that says why, and
// the session goes on.
func TestHostRefusesRequestsBeyondTheBound(t *testing.T) {
	var mu sync.Mutex
	started := 0
	host := &testHost{answer: func(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
		if rpc.ID < 100000 {
			return json.RawMessage(`"answered"`), nil
		}
		mu.Lock()
		started++
		mu.Unlock()
		<-ctx.Done() // held until the cell ends
		return nil, ctx.Err()
	}}
	s, _ := localSession(t, Config{}, host)
	res := run(t, s, Request{Code: fmt.Sprintf(`import mcp._channel as c
from mcp._results import BridgeError
ch = c.get()
for i in range(%d):
    ch.send({"t": "rpc", "id": 100000 + i, "exec": ch.exec_id, "method": "list_servers", "params": {}})
try:
    print(ch.call("list_servers", {}))
except BridgeError as e:
    print("refused:", e)`, MaxInFlight+10)})
	want := fmt.Sprintf("refused: more than %d requests of this cell are in flight", MaxInFlight)
	if !strings.Contains(res.Stdout.Text, want) {
		t.Fatalf("the cell printed %q", res.Stdout.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if started > MaxInFlight {
		t.Fatalf("%d requests were worked on at once", started)
	}
	if got := run(t, s, Request{Code: `import mcp._channel as c
print(c.get().call("list_servers", {}))`}); got.Stdout.Text != "answered\n" {
		t.Fatalf("the next cell: %q", got.Stdout.Text)
	}
}
