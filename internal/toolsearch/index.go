package toolsearch

import (
	"math"
	"sort"
	"strings"
)

// Index is the searchable form of one catalogue: for each term, the docs
// that have it with the BM25F score the term gives each (its impact),
// computed once here so that a query only adds them up; the words of the
// catalogue for typo and prefix matches; and each doc's vector.
type Index struct {
	s         *Searcher
	docs      []*Analysed
	postings  map[string][]posting
	vocab     []wordTerm    // every distinct word, sorted by word
	masks     []uint64      // the letters of each word of vocab
	byLen     map[int][]int // word length in bytes -> positions in vocab
	names     []string      // each doc's name, for fuzzy matches
	nameMasks []uint64      // the letters of each name
	vecs      [][]float32   // unit vectors, one per doc; nil without an Embedder
}

// posting is one doc that has a term, and what the term scores there.
type posting struct {
	doc    int32
	impact float32
}

// build computes the index of docs.
func (s *Searcher) build(docs []*Analysed) *Index {
	x := &Index{s: s, docs: docs, postings: map[string][]posting{}, byLen: map[int][]int{}}
	var avg [numFields]float64
	for _, d := range docs {
		for f := range numFields {
			avg[f] += float64(len(d.fields[f]))
		}
	}
	for f := range numFields {
		avg[f] = max(avg[f]/float64(max(len(docs), 1)), 1)
	}
	// First the weighted, length-normalised term frequency of each term in
	// each doc (BM25F's pseudo-frequency), then, once every term's document
	// frequency is known, its impact.
	tf := map[string]float64{}
	words := map[string]string{}
	for i, d := range docs {
		clear(tf)
		for f := range numFields {
			w := s.fieldWeight(f)
			if w == 0 || len(d.fields[f]) == 0 {
				continue
			}
			norm := 1 - s.opts.B + s.opts.B*float64(len(d.fields[f]))/avg[f]
			for _, t := range d.fields[f] {
				tf[t] += w / norm
			}
		}
		for t, v := range tf {
			x.postings[t] = append(x.postings[t], posting{doc: int32(i), impact: float32(v)})
		}
		for _, wt := range d.words {
			words[wt.word] = wt.term
		}
	}
	k1 := s.opts.K1
	for _, ps := range x.postings {
		idf := x.idf(len(ps))
		for j := range ps {
			v := float64(ps[j].impact)
			ps[j].impact = float32(idf * v * (k1 + 1) / (k1 + v))
		}
	}
	x.vocab = make([]wordTerm, 0, len(words))
	for w, t := range words {
		if _, ok := x.postings[t]; ok {
			x.vocab = append(x.vocab, wordTerm{w, t})
		}
	}
	sort.Slice(x.vocab, func(a, b int) bool { return x.vocab[a].word < x.vocab[b].word })
	x.masks = make([]uint64, len(x.vocab))
	for i, wt := range x.vocab {
		x.byLen[len(wt.word)] = append(x.byLen[len(wt.word)], i)
		x.masks[i] = letters(wt.word)
	}
	x.names = make([]string, len(docs))
	x.nameMasks = make([]uint64, len(docs))
	for i, d := range docs {
		x.names[i] = d.Doc.Name
		x.nameMasks[i] = letters(strings.ToLower(d.Doc.Name))
	}
	x.vecs = s.vectorsOf(docs)
	return x
}

// idf is BM25's inverse document frequency of a term that df docs have
// (1 with IDF ablated).
func (x *Index) idf(df int) float64 {
	if x.s.opts.Ablate.IDF {
		return 1
	}
	n, f := float64(len(x.docs)), float64(df)
	return math.Log(1 + (n-f+0.5)/(f+0.5))
}

// fieldWeight is the weight of field f: 1 for every field when the
// fields are ablated.
func (s *Searcher) fieldWeight(f field) float64 {
	if s.opts.Ablate.Fields {
		return 1
	}
	return s.opts.Weights.of(f)
}

// Len is the number of docs in the index.
func (x *Index) Len() int { return len(x.docs) }

// Doc returns the i-th doc of the index.
func (x *Index) Doc(i int) *Analysed { return x.docs[i] }
