package toolsearch

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxWordLen bounds the words that are indexed or searched: no real tool
// word is longer, and a longer run of letters is base64, a hash or a key.
const maxWordLen = 32

// eachWord calls yield with the lower-case words of s, split at
// non-letters and camelCase boundaries ("readFile", "read_file" and
// "read-file" all give read, file), until yield returns false. Words of
// one character and words longer than maxWordLen are skipped.
func eachWord(s string, yield func(string) bool) {
	eachWordAt(s, func(w string, _, _ int) bool { return yield(w) })
}

// eachWordAt is eachWord that also gives where in s each word starts and
// ends.
func eachWordAt(s string, yield func(w string, start, end int) bool) {
	var buf [maxWordLen * utf8.UTFMax]byte
	cur := buf[:0]
	n, start := 0, 0 // runes in cur, and where it starts
	long := false
	flush := func(end int) bool {
		ok := true
		if n > 1 && !long {
			ok = yield(string(cur), start, end)
		}
		cur, n, long = buf[:0], 0, false
		return ok
	}
	prevLower := false
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			prevLower = false
			if !flush(i) {
				return
			}
			continue
		}
		if unicode.IsUpper(r) && prevLower && !flush(i) {
			return
		}
		if n == 0 {
			start = i
		}
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		if n++; n > maxWordLen {
			long = true
			continue
		}
		cur = utf8.AppendRune(cur, unicode.ToLower(r))
	}
	flush(len(s))
}

// words returns the words of s (eachWord).
func words(s string) []string {
	var out []string
	eachWord(s, func(w string) bool {
		out = append(out, w)
		return true
	})
	return out
}

// analyser turns words into index terms: stop words out, the rest
// stemmed. Its stems are memoised (a catalogue repeats its words).
type analyser struct {
	stem, stop bool

	mu    sync.Mutex
	stems map[string]string
}

// maxStems bounds the stem memo; past it, the memo starts again.
const maxStems = 1 << 16

// term returns the index term of word w, or "" for a stop word.
func (a *analyser) term(w string) string {
	if a.stop && stopWords[w] {
		return ""
	}
	if !a.stem {
		return w
	}
	a.mu.Lock()
	s, ok := a.stems[w]
	a.mu.Unlock()
	if ok {
		return s
	}
	s = english.Stem(w, true)
	if s == "" {
		s = w
	}
	a.mu.Lock()
	if a.stems == nil || len(a.stems) >= maxStems {
		a.stems = make(map[string]string, 1024)
	}
	a.stems[w] = s
	a.mu.Unlock()
	return s
}
