package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// rpcLoop times n RPCs answered at once by the host, from Python, and
// prints the median in microseconds.
const rpcLoop = `import time
ts = []
for _ in range(N):
    t = time.perf_counter_ns()
    await runtime.list_servers(detailed=True)
    ts.append(time.perf_counter_ns() - t)
ts.sort()
print(ts[len(ts) // 2] // 1000)`

// BenchmarkRPCRoundTrip measures one RPC's round trip through the session
// and the runtime as local processes (no engine): the frame channel's own
// cost, on pipes (attach) and on the bridge's socket (direct). Each
// iteration is one RPC; the reported rt-µs is the median seen in Python.
func BenchmarkRPCRoundTrip(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is not installed")
	}
	for _, mode := range []ChannelMode{ChannelAttach, ChannelAuto} {
		b.Run(string(mode), func(b *testing.B) {
			host := &testHost{answer: func(context.Context, protocol.RPC) (json.RawMessage, error) {
				return json.RawMessage(`[]`), nil
			}}
			m := &Manager{log: slog.New(slog.DiscardHandler), connect: func(context.Context) (Engine, error) { return directEngine{}, nil }}
			s := m.NewSession(Config{Channel: mode, Log: slog.New(slog.DiscardHandler)}, host)
			defer s.Close()
			if _, err := s.Run(context.Background(), Request{Code: "1", Timeout: time.Minute, Caller: host}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			res, err := s.Run(context.Background(), Request{Code: strings.Replace(rpcLoop, "range(N)", "range("+strconv.Itoa(max(b.N, 1))+")", 1), Timeout: 10 * time.Minute, Caller: host})
			if err != nil || res.Status != StatusOK {
				b.Fatalf("%v %+v", err, res)
			}
			var us float64
			_, _ = fmt.Sscan(strings.TrimSpace(res.Stdout.Text), &us)
			b.ReportMetric(us, "rt-µs")
		})
	}
}
