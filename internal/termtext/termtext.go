package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Line returns s with every character that is not printable escaped,
// line feeds and tabs included: the result is one line.
func Line(s string) string { return escape(s, false) }

// Text returns s with every character that is not printable escaped,
// except line feeds and tabs, which stay as they are.
func Text(s string) string { return escape(s, true) }

// escape writes s with its unprintable characters as Go escapes; a space
// stays, and so do a line feed and a tab when keepLines is set. A
// backslash stays too, so that paths and Python source read as written.
func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isBad(s[i:]):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r, keepLines):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e', '\n'
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// clean reports whether s needs no escape, so that the common case does
// not allocate.
func clean(s string, keepLines bool) bool {
	for i, r := range s {
		if r == utf8.RuneError && isBad(s[i:]) || !printable(r, keepLines) {
			return false
		}
	}
	return true
}

// isBad reports whether s starts with a byte that is not valid UTF-8 (as
// opposed to a real U+FFFD).
func isBad(s string) bool {
	_, size := utf8.DecodeRuneInString(s)
	return size <= 1
}

// printable reports whether r may be written as it is: a graphic
// character or a space (of any width), and a line feed or a tab only
// when keepLines is set.
func printable(r rune, keepLines bool) bool {
	if r == '\n' || r == '\t' {
		return keepLines
	}
	return unicode.IsPrint(r) || unicode.Is(unicode.Zs, r)
}

// JSON returns encoded JSON with the characters encoding/json leaves as
// they are but a terminal acts on (DEL, the C1 controls, one of which is
// an 8-bit CSI, and the other unprintable characters Line escapes)
// written as \u escapes. encoding/json already escapes the C0 controls in
// strings, so the line feeds and spaces left are the layout's; outside
// strings JSON holds only ASCII, so the result is the same JSON value.
func JSON(b []byte) []byte {
	s := string(b)
	if !strings.ContainsFunc(s, jsonUnsafe) {
		return b
	}
	var out strings.Builder
	out.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case !jsonUnsafe(r):
			out.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return []byte(out.String())
}

// jsonUnsafe reports whether r, found in encoded JSON, must be escaped.
func jsonUnsafe(r rune) bool { return r >= 0x7f && !printable(r, false) }
