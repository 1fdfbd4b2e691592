package embed

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sync"
)

// table is distill/distill.py's output. A string, so that it stays in the
// binary's read-only data and is never copied.
//
//go:embed table.bin
var table string

// magic starts a table, and names its layout.
const magic = "CBEMBED2"

// maxInputBytes bounds the text that Embed reads: of a longer text it
// embeds the first and the last maxInputBytes/2 bytes (a pasted task's
// question is often at its end), so a long text costs no more than this.
const maxInputBytes = 8 << 10

// Model is a table of token vectors and the vocabulary that tokenizes text
// into its rows. It is read-only and safe for concurrent use.
type Model struct {
	data string // the whole table

	n, dim int // tokens, dimensions
	bits   int // per number: 4 (two a byte) or 8
	rowLen int // bytes a row

	// Where each section of data starts.
	scales, rows, offsets, sortedIDs, blob int

	unk int // the [UNK] token, which Embed leaves out
}

// Default returns the model compiled into the binary, the same one each
// call. The first call reads only the table's header; rows are read as
// texts are embedded.
func Default() *Model { return defaultModel() }

var defaultModel = sync.OnceValue(func() *Model {
	m, err := parse(table)
	if err != nil {
		panic("embed: the compiled-in table is broken (rebuild it with distill/distill.py): " + err.Error())
	}
	return m
})

// parse reads a table's header and checks that its sections fit.
func parse(data string) (*Model, error) {
	const header = len(magic) + 16
	if len(data) < header || data[:len(magic)] != magic {
		return nil, errors.New("no " + magic + " header")
	}
	m := &Model{data: data}
	m.n, m.dim = int(u32(data, len(magic))), int(u32(data, len(magic)+4))
	m.bits = int(u32(data, len(magic)+8))
	blobLen := int(u32(data, len(magic)+12))
	if m.n <= 0 || m.n > 1<<16 || m.dim <= 0 || m.dim > 4096 || m.dim%2 != 0 {
		return nil, fmt.Errorf("%d tokens of %d dimensions is out of range", m.n, m.dim)
	}
	if m.bits != 4 && m.bits != 8 {
		return nil, fmt.Errorf("%d bits a number, want 4 or 8", m.bits)
	}
	m.rowLen = m.dim * m.bits / 8
	m.scales = header
	m.rows = m.scales + 4*m.n
	m.offsets = m.rows + m.n*m.rowLen
	m.sortedIDs = m.offsets + 4*(m.n+1)
	m.blob = m.sortedIDs + 2*m.n
	if len(data) != m.blob+blobLen || int(m.offset(m.n)) != blobLen {
		return nil, fmt.Errorf("%d bytes, want %d", len(data), m.blob+blobLen)
	}
	id, ok := m.lookup("", "[UNK]")
	if !ok {
		return nil, errors.New("no [UNK] token")
	}
	m.unk = id
	return m, nil
}

// Dim is the length of the vectors the model makes.
func (m *Model) Dim() int { return m.dim }

// Embed returns text's vector: the mean of its tokens' rows, of length 1,
// or all zeros when no token of text is known. It reads at most
// maxInputBytes of text.
func (m *Model) Embed(text string) []float32 {
	v := make([]float32, m.dim)
	if len(text) > maxInputBytes {
		head, tail := cut(text, maxInputBytes/2)
		m.addTokens(v, head)
		m.addTokens(v, tail)
	} else {
		m.addTokens(v, text)
	}
	normalise(v)
	return v
}

// addTokens adds the rows of text's tokens to v.
func (m *Model) addTokens(v []float32, text string) {
	m.tokenize(text, func(id int) {
		if id == m.unk {
			return
		}
		scale := math.Float32frombits(u32(m.data, m.scales+4*id))
		row := m.data[m.rows+id*m.rowLen : m.rows+(id+1)*m.rowLen]
		if m.bits == 8 {
			for j := range v {
				v[j] += scale * float32(int8(row[j]))
			}
			return
		}
		for j := 0; j < len(row); j++ { // bytes, not the runes range would give
			b := row[j]
			v[2*j] += scale * float32(int8(b<<4)>>4)
			v[2*j+1] += scale * float32(int8(b)>>4)
		}
	})
}

// cosine is the cosine of the angle between a and b: their dot product
// over their lengths' product, 0 when either is zero or their lengths
// differ.
func cosine(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var dot, aa, bb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(aa*bb))
}

// normalise scales v to length 1 (a zero v stays zero).
func normalise(v []float32) {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 {
		return
	}
	n := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= n
	}
}

// cut returns the first and the last n bytes of s, each shortened to
// whole UTF-8 characters.
func cut(s string, n int) (head, tail string) {
	h, t := min(n, len(s)), max(len(s)-n, 0)
	for h > 0 && h < len(s) && !runeStart(s[h]) {
		h--
	}
	for t < len(s) && !runeStart(s[t]) {
		t++
	}
	return s[:h], s[t:]
}

// runeStart reports whether b starts a UTF-8 character.
func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// u32 is the little-endian uint32 at s[i:].
func u32(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// offset is where the i-th token in sorted order starts in the blob.
func (m *Model) offset(i int) uint32 { return u32(m.data, m.offsets+4*i) }

// token returns the i-th token in sorted order and its id.
func (m *Model) token(i int) (string, int) {
	tok := m.data[m.blob+int(m.offset(i)) : m.blob+int(m.offset(i+1))]
	p := m.sortedIDs + 2*i
	return tok, int(m.data[p]) | int(m.data[p+1])<<8
}

// lookup returns the id of the token prefix+s, by binary search over the
// sorted vocabulary (prefix is "" or "##"; the two are not joined, so
// nothing is allocated).
func (m *Model) lookup(prefix, s string) (int, bool) {
	lo, hi := 0, m.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		tok, _ := m.token(mid)
		if compareJoined(tok, prefix, s) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < m.n {
		if tok, id := m.token(lo); compareJoined(tok, prefix, s) == 0 {
			return id, true
		}
	}
	return 0, false
}

// compareJoined compares tok with prefix+s, bytewise.
func compareJoined(tok, prefix, s string) int {
	n := min(len(tok), len(prefix))
	for i := 0; i < n; i++ {
		if tok[i] != prefix[i] {
			return cmpByte(tok[i], prefix[i])
		}
	}
	if len(tok) < len(prefix) {
		return -1
	}
	rest := tok[len(prefix):]
	switch {
	case rest < s:
		return -1
	case rest > s:
		return 1
	}
	return 0
}

func cmpByte(a, b byte) int {
	if a < b {
		return -1
	}
	return 1
}
