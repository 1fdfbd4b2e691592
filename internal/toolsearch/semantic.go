package toolsearch

import (
	"math"
	"strings"
)

// Embedder turns a text into a vector, such that texts that mean much
// the same have vectors that point much the same way (by cosine). It must
// be safe for concurrent use and give the same vector for the same text.
type Embedder interface {
	Embed(text string) []float32
}

// embedText is what a doc's vector is made from: its name in words, its
// title, its description, and its parameters' names and descriptions.
// The server's name is left out: it says where a tool is, not what it
// does.
func embedText(d *Doc) string {
	var sb strings.Builder
	sb.WriteString(strings.Join(words(d.Name), " "))
	for _, s := range []string{d.Title, d.Description} {
		if s != "" {
			sb.WriteString(". " + s)
		}
	}
	for _, p := range d.Params {
		sb.WriteString(". " + strings.Join(words(p.Name), " "))
		if p.Description != "" {
			sb.WriteString(": " + p.Description)
		}
	}
	return sb.String()
}

// vectorsOf returns the unit vectors of docs, each computed once per
// definition (s.mu is held).
func (s *Searcher) vectorsOf(docs []*Analysed) [][]float32 {
	if s.opts.Embedder == nil {
		return nil
	}
	out := make([][]float32, len(docs))
	for i, d := range docs {
		v, ok := s.vectors[d.hash]
		if !ok {
			v = unit(s.opts.Embedder.Embed(embedText(&d.Doc)))
			s.vectors[d.hash] = v
		}
		out[i] = v
	}
	return out
}

// pruneVectors drops the vectors of tools that no kept index has, once
// they are as many as those it has (s.mu is held).
func (s *Searcher) pruneVectors() {
	keep := map[[32]byte]bool{}
	for _, x := range s.indexes {
		for _, d := range x.docs {
			keep[d.hash] = true
		}
	}
	if len(s.vectors) <= 2*len(keep) {
		return
	}
	for h := range s.vectors {
		if !keep[h] {
			delete(s.vectors, h)
		}
	}
}

// semantic returns the cosine of text's vector with each doc's, or nil
// without an Embedder.
func (x *Index) semantic(text string) []float32 {
	if x.vecs == nil || text == "" {
		return nil
	}
	q := unit(x.s.opts.Embedder.Embed(text))
	if q == nil {
		return nil
	}
	out := make([]float32, len(x.vecs))
	for i, v := range x.vecs {
		out[i] = dot(q, v)
	}
	return out
}

// unit returns v scaled to length 1 (nil for a zero or empty vector).
func unit(v []float32) []float32 {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 {
		return nil
	}
	n := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = f * n
	}
	return out
}

// dot is the dot product of a and b (the cosine, for unit vectors); 0
// when either is missing or their lengths differ. It adds four products
// at a time, which the compiler keeps in registers.
func dot(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
