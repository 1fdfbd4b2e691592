package termtext

import (
	"encoding/json"
	"testing"
)

func TestLineAndText(t *testing.T) {
	cases := []struct{ in, line, text string }{
		{"plain text, ünïcode 日本 ✓", "plain text, ünïcode 日本 ✓", "plain text, ünïcode 日本 ✓"},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"x\r\x1b[2J\x1b[H", `x\r\x1b[2J\x1b[H`, `x\r\x1b[2J\x1b[H`},
		{"csi \u009b31m del \x7f bell \a", `csi \u009b31m del \x7f bell \a`, `csi \u009b31m del \x7f bell \a`},
		{"bidi \u202eevil\u202c zw\u200bsp", `bidi \u202eevil\u202c zw\u200bsp`, `bidi \u202eevil\u202c zw\u200bsp`},
		{"ls \u2028 ps \u2029 nel \u0085", `ls \u2028 ps \u2029 nel \u0085`, `ls \u2028 ps \u2029 nel \u0085`},
		{"bad \xff\xfe utf8, real \ufffd", `bad \xff\xfe utf8, real ` + "\ufffd", `bad \xff\xfe utf8, real ` + "\ufffd"},
		{"nbsp\u00a0and\u3000wide", "nbsp\u00a0and\u3000wide", "nbsp\u00a0and\u3000wide"},
		{`C:\path\n stays`, `C:\path\n stays`, `C:\path\n stays`},
		{"nul \x00 vt \v ff \f", `nul \x00 vt \v ff \f`, `nul \x00 vt \v ff \f`},
	}
	for _, c := range cases {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func TestJSON(t *testing.T) {
	in := map[string]string{"name": "a\u009b31m\x7f\x1b\n<é> \u202e \U000e0041 日本"}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(b)
	for _, c := range string(got) {
		if c < 0x20 && c != '\n' || jsonUnsafe(c) {
			t.Fatalf("JSON left %q in %s", c, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["name"] != in["name"] {
		t.Fatalf("JSON changed the value: %v %q", err, back)
	}
	if clean := []byte(`{"a":"b"}`); &JSON(clean)[0] != &clean[0] {
		t.Fatal("clean JSON was copied")
	}
}
