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
		{name: "characters, not bytes", limit: 64, writes: []string{strings.Repeat("é", 64)}, want: strings.Repeat("é", 64)},
		{name: "one big write", limit: 64, writes: []string{strings.Repeat("a", 32) + strings.Repeat("m", 1000) + strings.Repeat("z", 32)},
			omitted: 1000, head: strings.Repeat("a", 32), end: "\n" + strings.Repeat("z", 32)},
		{name: "many small writes", limit: 64, writes: repeat("0123456789", 100), omitted: 1000 - 64, head: "0123456789", end: "0123456789"},
		{name: "tail wraps", limit: 64, writes: append(repeat("x", 200), "THE-END"), omitted: 207 - 64, end: "]\n" + strings.Repeat("x", 25) + "THE-END"},
		{name: "wide characters", limit: 64, writes: repeat("✓", 1000), omitted: 1000 - 64, head: strings.Repeat("✓", 32) + "\n[", end: "]\n" + strings.Repeat("✓", 32)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newClipBuffer(c.limit)
			for _, w := range c.writes {
				b.WriteString(w)
			}
			o := b.output(nil)
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
			if !strings.Contains(o.Text, "characters omitted; print less") {
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
	o := b.output(nil)
	if !utf8.ValidString(o.Text) {
		t.Fatalf("cut inside a character: %q", o.Text)
	}
	if o.Total != int64(100*utf8.RuneCountInString("héllo wörld ✓ ")) {
		t.Fatalf("total %d", o.Total)
	}
}

func TestClipBufferMarkers(t *testing.T) {
	const path = "/workspace/.codebridge/output/cell-7-stdout.txt"
	cases := []struct {
		name  string
		spill *Spill
		want  string
		path  string
	}{
		{"saved", &Spill{Path: path, Chars: 123520},
			"[... 123,456 characters omitted; the full output is in " + path + " ...]", path},
		{"saved in part", &Spill{Path: path, Chars: 1000, Error: "a spill file holds at most 32 MiB"},
			"[... 123,456 characters omitted; the first 1,000 characters of the output are in " + path +
				" (the rest was not saved: a spill file holds at most 32 MiB) ...]", ""},
		{"not saved", &Spill{Error: "could not create a file for it in /workspace/.codebridge/output: the workspace is full"},
			"[... 123,456 characters omitted; saving the full output failed: could not create a file for it in /workspace/.codebridge/output: the workspace is full; print less", ""},
		{"no report", nil, "[... 123,456 characters omitted; print less, or write it to a file and print a summary ...]", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newClipBuffer(64)
			b.WriteString(strings.Repeat("x", 123456+64))
			o := b.output(c.spill)
			if !strings.Contains(o.Text, c.want) {
				t.Fatalf("marker %q not in %q", c.want, o.Text)
			}
			if o.Path != c.path || o.Omitted != 123456 || o.Total != 123456+64 {
				t.Fatalf("path %q, omitted %d, total %d", o.Path, o.Omitted, o.Total)
			}
		})
	}
	// A stream within the budget has no marker, whatever the runtime says.
	b := newClipBuffer(64)
	b.WriteString("short")
	if o := b.output(&Spill{Path: path}); o.Text != "short" || o.Path != "" {
		t.Fatalf("got %+v", o)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
