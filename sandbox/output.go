package sandbox

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Output is what one stream of a cell printed, cut to a budget. When the
// stream was longer than the budget, Text keeps its head and tail around a
// marker, and Omitted says how many bytes were left out.
type Output struct {
	Text    string
	Omitted int64
	Total   int64
}

// clipBuffer keeps the first head and the last tail bytes written to it and
// counts the rest, so a cell that prints without end costs bounded memory.
type clipBuffer struct {
	limit int
	head  []byte
	tail  []byte // ring buffer of the last tailCap bytes
	pos   int    // next write position in tail once it is full
	full  bool
	total int64
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
	b.total += int64(len(s))
	if n := b.headCap() - len(b.head); n > 0 {
		if n > len(s) {
			n = len(s)
		}
		b.head = append(b.head, s[:n]...)
		s = s[n:]
	}
	if len(s) == 0 {
		return
	}
	tc := b.tailCap()
	if len(s) >= tc {
		b.tail = append(b.tail[:0], s[len(s)-tc:]...)
		b.pos, b.full = 0, true
		return
	}
	for len(s) > 0 {
		if !b.full {
			n := min(tc-len(b.tail), len(s))
			b.tail = append(b.tail, s[:n]...)
			s = s[n:]
			if len(b.tail) == tc {
				b.full, b.pos = true, 0
			}
			continue
		}
		n := copy(b.tail[b.pos:], s)
		s = s[n:]
		b.pos = (b.pos + n) % tc
	}
}

func (b *clipBuffer) output() Output {
	tail := b.tail
	if b.full && b.pos > 0 {
		tail = append(append([]byte{}, b.tail[b.pos:]...), b.tail[:b.pos]...)
	}
	kept := int64(len(b.head) + len(tail))
	if kept == b.total {
		return Output{Text: string(b.head) + string(tail), Total: b.total}
	}
	head := trimInvalidEnd(b.head)
	t := trimInvalidStart(tail)
	omitted := b.total - int64(len(head)+len(t))
	var sb strings.Builder
	sb.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "[... %d bytes of output omitted (%d in all); print less, or write it to a file and print a summary ...]\n", omitted, b.total)
	sb.Write(t)
	return Output{Text: sb.String(), Omitted: omitted, Total: b.total}
}

// trimInvalidEnd drops a UTF-8 sequence cut off at the end of b.
func trimInvalidEnd(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size > 1 {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

// trimInvalidStart drops continuation bytes at the start of b.
func trimInvalidStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}
