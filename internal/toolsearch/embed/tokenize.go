package embed

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxWordChars is the longest word WordPiece splits; a longer one is
// [UNK], as in BERT.
const maxWordChars = 100

// specials are the tokens that BERT's tokenizer takes as themselves where
// they are written in a text, before it normalizes the rest. Their rows
// are zero (and Embed leaves [UNK] out), so they add nothing to a vector.
var specials = [...]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

// tokenize calls yield with the WordPiece ids of text, as BERT's uncased
// tokenizer makes them (without [CLS] and [SEP] around them).
func (m *Model) tokenize(text string, yield func(id int)) {
	for text != "" {
		i, special := nextSpecial(text)
		eachWord(normalize(text[:i]), func(w string) { m.wordPieces(w, yield) })
		if special == "" {
			return
		}
		if id, ok := m.lookup("", special); ok {
			yield(id)
		}
		text = text[i+len(special):]
	}
}

// nextSpecial returns where the first special token written in text
// starts, and which it is (len(text) and "" when none is).
func nextSpecial(text string) (int, string) {
	for i := 0; i < len(text); i++ {
		j := strings.IndexByte(text[i:], '[')
		if j < 0 {
			break
		}
		i += j
		for _, s := range specials {
			if strings.HasPrefix(text[i:], s) {
				return i, s
			}
		}
	}
	return len(text), ""
}

// wordPieces calls yield with the ids of word's pieces: the longest
// vocabulary token that starts it, then the longest "##" token that
// starts the rest, and so on. A word that cannot be split so, or is
// longer than maxWordChars, is one [UNK].
func (m *Model) wordPieces(word string, yield func(id int)) {
	if utf8.RuneCountInString(word) > maxWordChars {
		yield(m.unk)
		return
	}
	var ids [maxWordChars]int
	n := 0
	prefix := ""
	for start := 0; start < len(word); {
		end := len(word)
		id, ok := 0, false
		for ; end > start; end-- {
			if !runeStart(wordByte(word, end)) {
				continue
			}
			if id, ok = m.lookup(prefix, word[start:end]); ok {
				break
			}
		}
		if !ok {
			yield(m.unk)
			return
		}
		ids[n] = id
		n++
		start, prefix = end, "##"
	}
	for _, id := range ids[:n] {
		yield(id)
	}
}

// wordByte is word[i], or a character's first byte at its end.
func wordByte(word string, i int) byte {
	if i == len(word) {
		return 0
	}
	return word[i]
}

// normalize does what BERT's uncased normalizer does: drops NULs,
// U+FFFD and control characters, turns white space into spaces, puts
// spaces around CJK ideographs, strips accents (NFD, then no non-spacing
// marks) and lower-cases.
func normalize(text string) string {
	var sb strings.Builder
	sb.Grow(len(text) + 8)
	ascii := true
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf:
			normalizeASCII(&sb, byte(r))
		case r == utf8.RuneError || isControl(r):
			continue
		case isWhitespace(r):
			sb.WriteByte(' ')
		case isCJK(r):
			sb.WriteByte(' ')
			sb.WriteRune(r)
			sb.WriteByte(' ')
		default:
			if r >= utf8.RuneSelf {
				ascii = false
			}
			sb.WriteRune(r)
		}
	}
	if ascii {
		return strings.ToLower(sb.String())
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return unicode.ToLower(r)
	}, norm.NFD.String(sb.String()))
}

// normalizeASCII writes what normalize makes of an ASCII byte: a space
// for white space (tab to carriage return, and space), nothing for other
// control characters, else the byte.
func normalizeASCII(sb *strings.Builder, b byte) {
	switch {
	case b == ' ' || b >= '\t' && b <= '\r':
		sb.WriteByte(' ')
	case b < ' ' || b == 0x7f:
	default:
		sb.WriteByte(b)
	}
}

// eachWord calls yield with the words of normalized text: runs between
// white space, each punctuation character a word of its own.
func eachWord(text string, yield func(string)) {
	start := -1
	for i, r := range text {
		switch {
		case r == ' ':
			if start >= 0 {
				yield(text[start:i])
			}
			start = -1
		case isPunct(r):
			if start >= 0 {
				yield(text[start:i])
			}
			yield(text[i : i+utf8.RuneLen(r)])
			start = -1
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		yield(text[start:])
	}
}

// isWhitespace is BERT's white space: Unicode's, with tab, newline and
// carriage return.
func isWhitespace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.White_Space, r)
}

// isControl is BERT's control character: Unicode's other categories (Cc,
// Cf, Co, Cs, and unassigned), but not tab, newline and carriage return
// (white space).
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.White_Space, r) {
		return false
	}
	return unicode.Is(unicode.C, r) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isPunct is BERT's punctuation: ASCII's (with $, +, <, =, >, ^, `, |, ~)
// and Unicode's P categories.
func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7f && !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}
	return unicode.IsPunct(r)
}

// isCJK is BERT's CJK ideograph range test.
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF ||
		r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F ||
		r >= 0x2B820 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF ||
		r >= 0x2F800 && r <= 0x2FA1F
}
