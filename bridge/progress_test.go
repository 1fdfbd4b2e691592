package bridge

import (
	"strings"
	"testing"
	"time"
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
