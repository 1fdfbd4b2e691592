package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A request's parameters are parsed once at the gate and encoded again in
// one canonical form, and that form, not the text the sandbox sent, is
// what the audit hashes, what an approval question shows and what the
// upstream receives. The raw text could show one thing and do another:
// with a name given twice ({"path": "/tmp/x", ..., "path": "/"}) an
// upstream acts on the last while a reader sees the first, and padding
// pushes the effective value past what a question shows.

// Canonical parses params and encodes them again: members of each object
// sorted by name, no whitespace, strings in their shortest escaping
// (invalid UTF-8 becomes U+FFFD), numbers as written. A name given twice
// in one object, at any depth, is an error, as is text that is not JSON.
// A caller that decodes the parameters itself decodes this form, once,
// and passes it in [Request.Params] with [Request.Canonical] set, so that
// the gate does not parse them again.
func Canonical(params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		return params, nil
	}
	v := jsontext.Value(bytes.Clone(params))
	if err := v.Format(jsontext.ReorderRawObjects(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		return nil, err
	}
	return json.RawMessage(v), nil
}

// What a question shows of the arguments.
const (
	// maxShownString is how much of one string (a value or a name) a
	// question shows; a longer one is cut, and its size said.
	maxShownString = 200
	// maxShownArgs is about how much of the arguments a question shows in
	// all; what comes after is counted, not shown.
	maxShownArgs = 2000
)

// showArguments renders canonical arguments (the output of canonical) for
// a person: the canonical JSON, with each string longer than
// maxShownString cut and followed by its size ("aaaa…" (12,345 bytes)),
// characters that do not print (controls, bidi overrides, zero-width
// ones) escaped as \uXXXX, and, past about maxShownArgs, only the count of
// the bytes not shown.
func showArguments(canon []byte) string {
	var b strings.Builder
	for i := 0; i < len(canon); {
		if b.Len() >= maxShownArgs {
			fmt.Fprintf(&b, " … (%s more bytes of arguments not shown: decline if unsure)", thousands(len(canon)-i))
			break
		}
		if canon[i] != '"' {
			b.WriteByte(canon[i])
			i++
			continue
		}
		end := stringEnd(canon, i)
		s, err := jsontext.AppendUnquote(nil, canon[i:end])
		if err != nil { // not from canonical: show what it is, escaped
			s = canon[i:end]
		}
		showString(&b, s)
		i = end
	}
	return b.String()
}

// stringEnd is the index just past the JSON string that starts at
// canon[start] (a quote).
func stringEnd(canon []byte, start int) int {
	for j := start + 1; j < len(canon); j++ {
		switch canon[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(canon)
}

// showString writes s quoted, cut to maxShownString bytes (at a character
// boundary) with its size when longer, every character that does not
// print escaped.
func showString(b *strings.Builder, s []byte) {
	shown, cut := s, len(s) > maxShownString
	if cut {
		n := maxShownString
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		shown = s[:n]
	}
	b.WriteByte('"')
	for len(shown) > 0 {
		r, w := utf8.DecodeRune(shown)
		shown = shown[w:]
		writeRune(b, r)
	}
	if cut {
		fmt.Fprintf(b, `…" (%s bytes)`, thousands(len(s)))
		return
	}
	b.WriteByte('"')
}

// writeRune writes one character of a shown string, escaped as in JSON
// when it is a quote, a backslash or does not print.
func writeRune(b *strings.Builder, r rune) {
	switch {
	case r == '"' || r == '\\':
		b.WriteByte('\\')
		b.WriteRune(r)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\t':
		b.WriteString(`\t`)
	case unicode.IsPrint(r) && !unicode.Is(unicode.Cf, r):
		b.WriteRune(r)
	case r > 0xFFFF:
		r1, r2 := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// Printable is s with every character that does not print (controls,
// bidi overrides, zero-width ones) escaped as \uXXXX, for names shown to
// a person (a tool name an upstream chose, a URI the sandbox sent).
func Printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteRune(r) // not quoted here: only what does not print is escaped
			continue
		}
		writeRune(&b, r)
	}
	return b.String()
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
