package toolsearch

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// queryWindow is how many bytes of each end of a query are read: room for
// far more than half the word budget of ordinary words, and a bound on
// what a query of any length costs.
const queryWindow = 2048

// Cut says how a query over its budget was cut; the zero value says it was
// not.
type Cut struct {
	Bytes      int // the query's length in bytes
	Head, Tail int // how many words of its start and of its end were searched
}

// Cut reports whether the query was cut.
func (c Cut) Cut() bool { return c.Bytes > 0 }

// String says what was searched of a cut query, or "".
func (c Cut) String() string {
	if !c.Cut() {
		return ""
	}
	return fmt.Sprintf("the query (%d bytes) is over the search budget: only its first %d and last %d words were searched", c.Bytes, c.Head, c.Tail)
}

// query is a query cut to its budget: its words, the text they were read
// from (for the Embedder), and what was cut.
type query struct {
	words []string
	text  string
	cut   Cut
}

// span is a word of a query and where it is.
type span struct {
	word       string
	start, end int
}

// bound cuts q to the budget of Options.QueryWords words. A query within
// it is searched whole; a longer one by the first half of the budget and
// the last (a pasted task often ends with its question), read from at
// most queryWindow bytes at each end, so that whatever q's length, bound
// reads at most 2*queryWindow bytes of it.
func (s *Searcher) bound(q string) query {
	budget := max(s.opts.QueryWords, 2)
	headEnd := wordBoundary(q, runeStart(q, min(len(q), queryWindow)))
	tailStart := headEnd
	if t := runeStart(q, len(q)-queryWindow); t > headEnd {
		tailStart = t
		if inWord(q[runeStart(q, t-1):]) {
			tailStart = runEnd(q, t)
		}
	}
	var ws []span
	collect := func(text string, offset int) {
		eachWordAt(text, func(w string, start, end int) bool {
			ws = append(ws, span{w, offset + start, offset + end})
			return true
		})
	}
	// Neither window cuts a word in two: the head ends before one (which
	// the tail then reads whole, or a long query leaves out), the tail
	// starts after one.
	collect(q[:headEnd], 0)
	inHead := len(ws)
	collect(q[tailStart:], tailStart)
	if tailStart == headEnd && len(ws) <= budget {
		return query{words: wordsOf(ws), text: q}
	}
	head := ws[:min(inHead, budget/2)]
	tail := ws[len(head):]
	if room := budget - len(head); len(tail) > room {
		tail = tail[len(tail)-room:]
	}
	text := q[:endOf(head)]
	if len(tail) > 0 {
		text += " … " + q[tail[0].start:]
	}
	return query{
		words: append(wordsOf(head), wordsOf(tail)...),
		text:  text,
		cut:   Cut{Bytes: len(q), Head: len(head), Tail: len(tail)},
	}
}

// runeStart moves i back to the start of the rune it falls in (to 0 when
// it is before the start of q).
func runeStart(q string, i int) int {
	if i <= 0 {
		return 0
	}
	for i > 0 && i < len(q) && !utf8.RuneStart(q[i]) {
		i--
	}
	return i
}

// wordBoundary moves i, a rune start in q, back out of the word it falls
// inside, if any, to the word's start. A run of letters and digits too
// long to be a word is cut where i is: neither piece is a word.
func wordBoundary(q string, i int) int {
	if i <= 0 || i >= len(q) || !inWord(q[i:]) || !inWord(q[runeStart(q, i-1):]) {
		return i
	}
	for j := i; j > 0 && i-j <= maxWordLen*utf8.UTFMax; {
		k := runeStart(q, j-1)
		if !inWord(q[k:]) {
			return j
		}
		j = k
		if j == 0 {
			return 0
		}
	}
	return i
}

// runEnd is where the run of letters and digits at i ends.
func runEnd(q string, i int) int {
	for i < len(q) && inWord(q[i:]) {
		_, n := utf8.DecodeRuneInString(q[i:])
		i += n
	}
	return i
}

// inWord reports whether s starts with a letter or digit.
func inWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func wordsOf(ws []span) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.word
	}
	return out
}

func endOf(ws []span) int {
	if len(ws) == 0 {
		return 0
	}
	return ws[len(ws)-1].end
}
