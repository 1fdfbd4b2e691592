package sandbox

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipBuffer(t *testing.T) {
	cases := []struct {
		name      string
		limit     int
		writes    []string
		want      string // exact, when the output fits
		omitted   int64
		head, end string
	}{
		{name: "fits", limit: 100, writes: []string{"hello ", "world"}, want: "hello world"},
		{name: "exactly the limit", limit: 64, writes: []string{strings.Repeat("a", 64)}, want: strings.Repeat("a", 64)},
		{name: "one big write", limit: 64, writes: []string{strings.Repeat("a", 32) + strings.Repeat("m", 1000) + strings.Repeat("z", 32)},
			omitted: 1000, head: strings.Repeat("a", 32), end: strings.Repeat("z", 32)},
		{name: "many small writes", limit: 64, writes: repeat("0123456789", 100), omitted: 1000 - 64, head: "0123456789", end: "0123456789"},
		{name: "tail wraps", limit: 64, writes: append(repeat("x", 200), "THE-END"), omitted: 207 - 64, end: "THE-END"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newClipBuffer(c.limit)
			for _, w := range c.writes {
				b.WriteString(w)
			}
			o := b.output()
			if c.want != "" {
				if o.Text != c.want || o.Omitted != 0 {
					t.Fatalf("got %q (omitted %d), want %q", o.Text, o.Omitted, c.want)
				}
				return
			}
			if o.Omitted != c.omitted {
				t.Fatalf("omitted %d, want %d; text %q", o.Omitted, c.omitted, o.Text)
			}
			if !strings.HasPrefix(o.Text, c.head) || !strings.HasSuffix(o.Text, c.end) {
				t.Fatalf("head/tail not kept: %q", o.Text)
			}
			if !strings.Contains(o.Text, "bytes of output omitted") {
				t.Fatalf("no marker: %q", o.Text)
			}
		})
	}
}

func TestClipBufferKeepsUTF8Whole(t *testing.T) {
	b := newClipBuffer(64)
	for range 100 {
		b.WriteString("héllo wörld ✓ ")
	}
	o := b.output()
	if !utf8.ValidString(o.Text) {
		t.Fatalf("cut inside a character: %q", o.Text)
	}
	if o.Total != int64(100*len("héllo wörld ✓ ")) {
		t.Fatalf("total %d", o.Total)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
