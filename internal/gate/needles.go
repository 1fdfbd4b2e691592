package gate

import (
	"encoding/binary"
	"sort"
	"strings"
)

// needle is one exact value to hide wherever it shows: a secret, or a
// value the session already gave a token for (a token put back into an
// upstream's arguments must not come back as the value, whatever text
// surrounds it and whether or not its pattern still matches there).
type needle struct {
	value  string
	secret string // the secret's name; "" for a known value
	kind   string // the known value's kind
}

// needles finds many exact values in one pass over a text: each value's
// first bytes (up to 8) are a key, looked up at every offset after a
// bitmap has ruled most offsets out. A few values are found with
// strings.Index, which is faster for them.
type needles struct {
	list   []needle // longest first
	maxLen int
	win    int                // key length
	keys   map[uint64][]int32 // key -> needles starting with it, longest first
	filter []uint64           // bitmap of hashed keys
	short  []int32            // needles shorter than win (with keys)
}

// fewNeedles is the most values looked for one by one.
const fewNeedles = 8

func newNeedles(list []needle) *needles {
	sort.SliceStable(list, func(i, j int) bool { return len(list[i].value) > len(list[j].value) })
	n := &needles{list: list}
	for _, nd := range list {
		n.maxLen = max(n.maxLen, len(nd.value))
	}
	if len(list) <= fewNeedles {
		return n
	}
	n.win = 8
	for _, nd := range list {
		if len(nd.value) >= 4 {
			n.win = min(n.win, len(nd.value))
		}
	}
	n.keys, n.filter = map[uint64][]int32{}, make([]uint64, 1<<16/64)
	for i, nd := range list {
		if len(nd.value) < n.win {
			n.short = append(n.short, int32(i))
			continue
		}
		k := n.key(nd.value)
		n.keys[k] = append(n.keys[k], int32(i))
		h := hashKey(k)
		n.filter[h/64] |= 1 << (h % 64)
	}
	return n
}

func (n *needles) key(s string) uint64 {
	var b [8]byte
	copy(b[:], s[:n.win])
	return binary.LittleEndian.Uint64(b[:])
}

// le64 reads 8 bytes of s as a little-endian number (the compiler makes
// it one load).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func hashKey(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> 48 }

// each calls yield for the occurrences of the needles in text, until
// yield says stop. Where needles overlap, the longer one comes first
// (one needle search) or the earlier one (many).
func (n *needles) each(text string, yield func(start, end int, nd *needle) bool) {
	if n == nil {
		return
	}
	if n.keys == nil {
		for i := range n.list {
			if !eachIndex(text, &n.list[i], yield) {
				return
			}
		}
		return
	}
	for _, i := range n.short {
		if !eachIndex(text, &n.list[i], yield) {
			return
		}
	}
	mask := uint64(1)<<(8*n.win) - 1
	if n.win == 8 {
		mask = ^uint64(0)
	}
	for p := 0; p+n.win <= len(text); p++ {
		var k uint64
		if p+8 <= len(text) {
			k = le64(text[p:p+8]) & mask
		} else {
			k = n.key(text[p:])
		}
		if h := hashKey(k); n.filter[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, i := range n.keys[k] {
			nd := &n.list[i]
			if strings.HasPrefix(text[p:], nd.value) {
				if !yield(p, p+len(nd.value), nd) {
					return
				}
				p += len(nd.value) - 1
				break
			}
		}
	}
}

// eachIndex yields the occurrences of one needle.
func eachIndex(text string, nd *needle, yield func(start, end int, nd *needle) bool) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], nd.value)
		if i < 0 {
			return true
		}
		s, e := off+i, off+i+len(nd.value)
		if !yield(s, e, nd) {
			return false
		}
		off = e
	}
}
