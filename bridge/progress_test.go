package bridge

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestLastLine(t *testing.T) {
	cases := []struct {
		name   string
		pieces []string
		want   string
	}{
		{"nothing", nil, ""},
		{"one line", []string{"working\n"}, "working"},
		{"the last of several", []string{"a\nb\nc\n"}, "c"},
		{"a line in pieces", []string{"wor", "king", "\n"}, "working"},
		{"a line being written wins", []string{"done\n", "now "}, "now "},
		{"blank lines are skipped", []string{"step 1\n\n  \n"}, "step 1"},
		{"a progress bar", []string{"\r 10%", "\r 50%"}, " 50%"},
		{"windows line ends", []string{"step 2\r\n"}, "step 2"},
		{"long lines are cut", []string{strings.Repeat("é", 1000) + "\n"}, strings.Repeat("é", maxLineChars)},
		{"long partial lines are cut", []string{strings.Repeat("x", 150), strings.Repeat("y", 150)},
			strings.Repeat("x", 150) + strings.Repeat("y", 50)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l lastLine
			for _, p := range c.pieces {
				l.add("stdout", p)
			}
			if got := l.latest(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestProgressMessage(t *testing.T) {
	if got := progressMessage(12500*time.Millisecond, "  working\n"); got != "12s: working" {
		t.Errorf("got %q", got)
	}
	if got := progressMessage(3*time.Second, ""); got != "3s: running, no output yet" {
		t.Errorf("got %q", got)
	}
}

// TestProgressTimers: under a fake clock (testing/synctest), a long run's
// first notification comes progressDelay after it starts and one every
// progressEvery after, each telling the time run and the latest line
// (through redact), with a progress that grows; none comes after stop,
// and the end of the call's context ends them too.
func TestProgressTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []*mcp.ProgressNotificationParams
		notify := func(_ context.Context, p *mcp.ProgressNotificationParams) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
			return nil
		}
		sent := func() []*mcp.ProgressNotificationParams {
			synctest.Wait() // the loop is waiting for its timer again
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(got)
		}
		redact := func(s string) string { return strings.ReplaceAll(s, "secret", "<hidden>") }
		output, stop := progressLoop(context.Background(), "tok", notify, redact)

		time.Sleep(progressDelay - time.Nanosecond)
		if n := len(sent()); n != 0 {
			t.Fatalf("%d notifications before progressDelay", n)
		}
		time.Sleep(time.Nanosecond)
		if s := sent(); len(s) != 1 || s[0].Message != "2s: running, no output yet" || s[0].ProgressToken != "tok" || s[0].Progress != 2 {
			t.Fatalf("at progressDelay: %+v", s)
		}
		output("stdout", "step 1 of a secret plan\n")
		time.Sleep(progressEvery)
		if s := sent(); len(s) != 2 || s[1].Message != "3s: step 1 of a <hidden> plan" || s[1].Progress != 3 {
			t.Fatalf("a second later: %+v", s[len(s)-1])
		}
		stop()
		time.Sleep(10 * progressEvery)
		if n := len(sent()); n != 2 {
			t.Fatalf("%d notifications after stop; want the 2 before", n)
		}

		ctx, cancel := context.WithCancel(context.Background())
		_, stop = progressLoop(ctx, "tok", notify, redact)
		cancel()
		time.Sleep(10 * progressEvery)
		if n := len(sent()); n != 2 {
			t.Fatalf("%d notifications after the call's context ended", n)
		}
		stop()
	})
}
