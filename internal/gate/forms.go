package gate

import (
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The forms a hidden value takes on its way back to the sandbox. A tool
// that returns JSON as text escapes a secret's " and \ once more than the
// result's own JSON does; a URI percent-encodes it; a file read as media,
// an image or a resource blob carries it in base64, at any byte offset.
// Redaction looks at each string as written and through these forms,
// nested up to [maxDepth] layers (base64 of JSON text, say), and replaces
// what it finds in the form it was found in: an escaped secret by its
// name, a base64 run by the base64 of its redacted bytes.
//
// Base64 is decoded, not matched by its renderings: a value at any byte
// offset has three renderings of its middle in each of two alphabets, and
// the renderings of personal data found by pattern (an email never seen
// before) cannot be listed at all. Decoding a run once finds both, at any
// offset, and re-encoding keeps the rest of the data as it was.

// maxDepth is how many layers of encoding are looked through.
const maxDepth = 3

// view is text with one layer of encoding undone, and where each decoded
// part came from, to replace a match in the original text.
type view struct {
	text string
	segs []seg // the decoded sequences, in order; nil when not asked for
}

// seg says that view bytes [v, v+vn) were decoded from original bytes
// [o, o+on); between segs the two advance together.
type seg struct{ v, vn, o, on int }

// at is the segment holding view byte p, or the last one before it (-1).
func (w *view) at(p int) int {
	return sort.Search(len(w.segs), func(i int) bool { return w.segs[i].v > p }) - 1
}

// start is the original offset of view byte p.
func (w *view) start(p int) int {
	i := w.at(p)
	if i < 0 {
		return p
	}
	s := w.segs[i]
	if p < s.v+s.vn {
		return s.o
	}
	return s.o + s.on + p - (s.v + s.vn)
}

// end is the original offset just after view bytes [..., q).
func (w *view) end(q int) int {
	if q == 0 {
		return 0
	}
	i := w.at(q - 1)
	if i < 0 {
		return q
	}
	s := w.segs[i]
	if q-1 < s.v+s.vn {
		return s.o + s.on
	}
	return s.o + s.on + q - (s.v + s.vn)
}

// decoder undoes one layer of encoding in text; ok is false when text has
// none of it. Segs are recorded when mapped is set.
type decoder func(text string, mapped bool) (w view, ok bool)

// decoders are the escapes looked through: JSON's and percent-encoding.
var decoders = []decoder{unescapeJSON, unescapePercent}

// unescapeJSON undoes the escapes of a JSON string (\" \\ \/ \b \f \n \r
// \t \uXXXX, surrogate pairs joined) wherever they appear in text.
func unescapeJSON(text string, mapped bool) (view, bool) {
	return unescape(text, mapped, nextJSONEscape, writeJSONEscape)
}

// unescape is text with every escape undone: next finds the offset of the
// next escape at or after an offset (-1: none), write writes what the
// escape at the start of its string stands for and returns its length.
// With mapped, the view maps each undone escape back to its place in
// text. It reports false when text holds no escape.
func unescape(text string, mapped bool, next func(text string, from int) int, write func(b *strings.Builder, s string) int) (view, bool) {
	i := next(text, 0)
	if i < 0 {
		return view{}, false
	}
	var b strings.Builder
	b.Grow(len(text))
	var w view
	last := 0
	for ; i >= 0; i = next(text, last) {
		b.WriteString(text[last:i])
		v := b.Len()
		n := write(&b, text[i:])
		if mapped {
			w.segs = append(w.segs, seg{v: v, vn: b.Len() - v, o: i, on: n})
		}
		last = i + n
	}
	b.WriteString(text[last:])
	w.text = b.String()
	return w, true
}

// nextJSONEscape is the offset of the next escape at or after from, or -1.
func nextJSONEscape(text string, from int) int {
	for {
		i := strings.IndexByte(text[from:], '\\')
		if i < 0 {
			return -1
		}
		i += from
		if i+1 < len(text) {
			switch c := text[i+1]; c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				return i
			case 'u':
				if _, ok := hex4(text[i+2:]); ok {
					return i
				}
			}
		}
		from = i + 1
	}
}

// writeJSONEscape writes what the escape at the start of s stands for and
// returns its length.
func writeJSONEscape(b *strings.Builder, s string) int {
	switch s[1] {
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, _ := hex4(s[2:])
		if utf16.IsSurrogate(rune(r)) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if r2, ok := hex4(s[8:]); ok {
				if p := utf16.DecodeRune(rune(r), rune(r2)); p != utf8.RuneError {
					b.WriteRune(p)
					return 12
				}
			}
		}
		b.WriteRune(rune(r)) // a lone surrogate is written as U+FFFD, as JSON decoders do
		return 6
	default:
		b.WriteByte(s[1])
	}
	return 2
}

// hex4 reads four hex digits.
func hex4(s string) (uint16, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r uint16
	for i := range 4 {
		d, ok := unhex(s[i])
		if !ok {
			return 0, false
		}
		r = r<<4 | uint16(d)
	}
	return r, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return c | 0x20 - 'a' + 10, true
	}
	return 0, false
}

// unescapePercent undoes %XX escapes, as URIs write file names.
func unescapePercent(text string, mapped bool) (view, bool) {
	return unescape(text, mapped, nextPercentEscape, writePercentEscape)
}

// nextPercentEscape is the offset of the next %XX at or after from, or -1.
func nextPercentEscape(text string, from int) int {
	for {
		i := strings.IndexByte(text[from:], '%')
		if i < 0 {
			return -1
		}
		i += from
		if i+2 < len(text) {
			_, ok1 := unhex(text[i+1])
			_, ok2 := unhex(text[i+2])
			if ok1 && ok2 {
				return i
			}
		}
		from = i + 1
	}
}

// writePercentEscape writes the byte the %XX at the start of s stands for.
func writePercentEscape(b *strings.Builder, s string) int {
	hi, _ := unhex(s[1])
	lo, _ := unhex(s[2])
	b.WriteByte(hi<<4 | lo)
	return 3
}

// minBase64 is the shortest run of base64 looked into: 8 characters are
// 6 bytes, the shortest secret.
const minBase64 = 8

// b64Run is a run of base64 characters in a text: [start, end), in the
// standard or the URL-safe alphabet, padded or not, and wrapped in lines
// of wrap characters (0: one line) ended by nl.
type b64Run struct {
	start, end int
	url, pad   bool
	wrap       int
	nl         string
}

// b64Class tells the characters of the two alphabets apart: bit 1 for
// letters and digits, 2 for + and /, 4 for - and _.
var b64Class = func() (t [256]byte) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c], t[c+'a'-'A'] = 1, 1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1
	}
	t['+'], t['/'] = 2, 2
	t['-'], t['_'] = 4, 4
	return
}()

// base64Runs calls yield for each run of base64 in text that is long
// enough and written in one alphabet. A run may go on after a line break
// when its line so far is a whole number of 4-character groups (MIME and
// PEM wrap at 76 and 64).
func base64Runs(text string, yield func(b64Run) bool) {
	n := len(text)
	for i := 0; i < n; {
		for i < n && b64Class[text[i]] == 0 {
			i++
		}
		if i == n {
			return
		}
		r := b64Run{start: i}
		var cls byte
		for {
			j := i
			for i < n {
				k := b64Class[text[i]]
				if k == 0 {
					break
				}
				cls |= k
				i++
			}
			if line := i - j; !r.lineBreak(text, i, line) {
				break
			} else {
				r.wrap = line
				i += len(r.nl)
			}
		}
		r.end = i
		for k := 0; k < 2 && i < n && text[i] == '='; k++ {
			i++
			r.end, r.pad = i, true
		}
		if r.end-r.start >= minBase64 && cls&6 != 6 {
			r.url = cls&4 != 0
			if !yield(r) {
				return
			}
		}
	}
}

// lineBreak reports whether the run goes on after a line of line
// characters ending at text[i], and sets the run's line ending.
func (r *b64Run) lineBreak(text string, i, line int) bool {
	if i >= len(text) || (text[i] != '\n' && text[i] != '\r') || line < 16 || line%4 != 0 || (r.wrap != 0 && r.wrap != line) {
		return false
	}
	nl := "\n"
	if text[i] == '\r' {
		nl = "\r\n"
	}
	if (r.nl != "" && r.nl != nl) || !strings.HasPrefix(text[i:], nl) || i+len(nl) >= len(text) || b64Class[text[i+len(nl)]] == 0 {
		return false
	}
	r.nl = nl
	return true
}

// encoding is the run's alphabet, without padding.
func (r b64Run) encoding() *base64.Encoding {
	if r.url {
		return base64.RawURLEncoding
	}
	return base64.RawStdEncoding
}

// chars are the run's base64 characters: no line breaks, no padding, and
// no last character that cannot end a group.
func (r b64Run) chars(text string) string {
	s := strings.TrimRight(text[r.start:r.end], "=")
	if r.nl != "" {
		s = strings.ReplaceAll(s, r.nl, "")
	}
	if len(s)%4 == 1 {
		s = s[:len(s)-1]
	}
	return s
}

// decode is the run's bytes.
func (r b64Run) decode(text string) []byte {
	s := r.chars(text)
	out := make([]byte, r.encoding().DecodedLen(len(s)))
	n, _ := r.encoding().Decode(out, []byte(s))
	return out[:n]
}

// encode writes data as the run was written: alphabet, lines, and
// padding when the run had it or was a whole number of groups (the
// common, padded encoding, which a run without '=' may also be).
func (r b64Run) encode(data []byte, text string) string {
	s := r.encoding().EncodeToString(data)
	if (r.pad || len(r.chars(text))%4 == 0) && len(s)%4 != 0 {
		s += strings.Repeat("=", 4-len(s)%4)
	}
	if r.wrap == 0 || len(s) <= r.wrap {
		return s
	}
	var b strings.Builder
	for len(s) > r.wrap {
		b.WriteString(s[:r.wrap])
		b.WriteString(r.nl)
		s = s[r.wrap:]
	}
	b.WriteString(s)
	return b.String()
}

// b64Chunk is how many base64 characters are decoded at a time when a
// run is only looked at: a 64 MiB image is checked in 48 KiB pieces, not
// copied whole.
const b64Chunk = 64 << 10

// anyChunk calls hit on the run's bytes a piece at a time, each piece
// starting with the last overlap bytes of the one before (so that a match
// across the seam is seen whole), until hit says yes. A short run (a word
// of prose, mostly) is decoded into scratch. Hit must not keep the string
// it is given.
func (r b64Run) anyChunk(text string, overlap int, scratch []byte, hit func(string) bool) bool {
	enc := r.encoding()
	chars := r.chars(text)
	if enc.DecodedLen(len(chars)) <= cap(scratch) {
		buf := scratch[:cap(scratch)]
		n, _ := enc.Decode(buf, unsafe.Slice(unsafe.StringData(chars), len(chars)))
		return n > 0 && hit(unsafe.String(&buf[0], n))
	}
	var carry []byte
	out := make([]byte, 0, enc.DecodedLen(min(b64Chunk, len(chars))))
	for len(chars) > 0 {
		n := min(b64Chunk, len(chars))
		out = append(out[:0], carry...)
		k := len(out)
		out = slices.Grow(out, enc.DecodedLen(n))[:k+enc.DecodedLen(n)]
		m, _ := enc.Decode(out[k:], unsafe.Slice(unsafe.StringData(chars), n))
		out = out[:k+m]
		if len(out) > 0 && hit(unsafe.String(&out[0], len(out))) {
			return true
		}
		carry = append(carry[:0], out[max(0, len(out)-overlap):]...)
		chars = chars[n:]
	}
	return false
}
