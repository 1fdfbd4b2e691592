package sandbox

import (
	"fmt"
	"github.com/codebridge/codebridge/internal/protocol"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Output is what one stream of a cell printed, cut to a budget of
// characters. When the stream was longer than the budget, Text keeps its
// head and tail around a marker that says how many characters were left out
// and, when the runtime saved the stream's complete output, where.
type Output struct {
	Text    string
	Omitted int64 // characters left out of Text
	Total   int64 // characters the stream printed
	// Path is the file in the sandbox that holds the complete output, when
	// the stream was cut and the runtime could save it.
	Path string
}

// Spill is the runtime's report on a stream that went over the budget
// (the done frame's spill field; see pyruntime/PROTOCOL.md).
type Spill = protocol.Spill

// clipBuffer keeps the first limit/2 and the last limit/2 characters
// written to it and counts the rest, so a cell that prints without end
// costs bounded memory. Writes are whole UTF-8 strings (frame data).
type clipBuffer struct {
	limit     int
	head      []byte
	headChars int
	tail      []piece // the last pieces written, at least tailCap characters once full
	tailChars int
	total     int64
}

// piece is a string and its length in characters.
type piece struct {
	s string
	n int
}

func newClipBuffer(limit int) *clipBuffer {
	if limit < 64 {
		limit = 64
	}
	return &clipBuffer{limit: limit}
}

func (b *clipBuffer) headCap() int { return b.limit / 2 }
func (b *clipBuffer) tailCap() int { return b.limit - b.limit/2 }

func (b *clipBuffer) WriteString(s string) {
	n := utf8.RuneCountInString(s)
	b.total += int64(n)
	if room := b.headCap() - b.headChars; room > 0 {
		if n <= room {
			b.head = append(b.head, s...)
			b.headChars += n
			return
		}
		cut := byteOffset(s, room)
		b.head = append(b.head, s[:cut]...)
		b.headChars += room
		s, n = s[cut:], n-room
	}
	tc := b.tailCap()
	if n >= tc {
		// A copy, so that a large frame's string is not kept alive.
		b.tail = append(b.tail[:0], piece{strings.Clone(s[byteOffset(s, n-tc):]), tc})
		b.tailChars = tc
		return
	}
	b.tail = append(b.tail, piece{s, n})
	b.tailChars += n
	// Drop whole pieces the tail no longer needs; output() trims the rest.
	for len(b.tail) > 1 && b.tailChars-b.tail[0].n >= tc {
		b.tailChars -= b.tail[0].n
		b.tail = b.tail[1:]
	}
}

// output returns what the buffer kept. sp is the runtime's spill report
// for the stream, or nil.
func (b *clipBuffer) output(sp *Spill) Output {
	var tb strings.Builder
	for _, p := range b.tail {
		tb.WriteString(p.s)
	}
	tail := tb.String()
	if extra := b.tailChars - b.tailCap(); extra > 0 {
		tail = tail[byteOffset(tail, extra):]
	}
	kept := int64(b.headChars + min(b.tailChars, b.tailCap()))
	if kept == b.total {
		return Output{Text: string(b.head) + tail, Total: b.total}
	}
	omitted := b.total - kept
	var sb strings.Builder
	sb.Write(b.head)
	if len(b.head) > 0 && b.head[len(b.head)-1] != '\n' {
		sb.WriteByte('\n')
	}
	out := Output{Omitted: omitted, Total: b.total}
	switch {
	case sp != nil && sp.Path != "" && sp.Error == "":
		out.Path = sp.Path
		fmt.Fprintf(&sb, "[... %s characters omitted; the full output is in %s ...]\n", commas(omitted), sp.Path)
	case sp != nil && sp.Path != "":
		fmt.Fprintf(&sb, "[... %s characters omitted; the first %s characters of the output are in %s (the rest was not saved: %s) ...]\n",
			commas(omitted), commas(sp.Chars), sp.Path, sp.Error)
	case sp != nil && sp.Error != "":
		fmt.Fprintf(&sb, "[... %s characters omitted; saving the full output failed: %s; print less, or write it to a file and print a summary ...]\n",
			commas(omitted), sp.Error)
	default:
		fmt.Fprintf(&sb, "[... %s characters omitted; print less, or write it to a file and print a summary ...]\n", commas(omitted))
	}
	sb.WriteString(tail)
	out.Text = sb.String()
	return out
}

// byteOffset returns the byte offset of the n-th character of s (len(s)
// when s is shorter).
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// commas formats n with thousands separators: 123456 is "123,456".
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
