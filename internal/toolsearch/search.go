package toolsearch

import (
	"slices"
	"sync"
)

// Options tune a Searcher. Defaults gives the measured ones; the bench's
// ablation switches parts off through Ablate.
type Options struct {
	Weights Weights // BM25F field weights
	K1      float64 // BM25 term-frequency saturation
	B       float64 // BM25 length normalisation, 0 (none) to 1 (full)

	// Typo and Prefix weigh a query word that matches no indexed word
	// exactly but is a typo of one (one letter wrong, two in a word of
	// eight letters or more) or the start of one, against an exact match
	// (1).
	Typo, Prefix float64
	// Fuzzy weighs a query word that matches nothing else but is a
	// subsequence of a tool's name ("getsum" in get_sum), against a word
	// of the same IDF matched once (1).
	Fuzzy float64

	// Embedder, if set, gives the semantic ranking that is fused with the
	// lexical one.
	Embedder Embedder
	// Fusion says how the two rankings are fused.
	Fusion Fusion
	// RRFK is reciprocal rank fusion's k: a hit at rank r counts
	// 1/(RRFK+r).
	RRFK float64
	// SemanticDepth is how many of the semantic ranking's best are fused;
	// SemanticFloor the cosine below which a tool is not a semantic hit.
	SemanticDepth int
	SemanticFloor float64
	// LexicalWeight is the lexical ranking's share of FuseWeighted.
	LexicalWeight float64
	// SoftDepth is how many of the fused ranking's best are scored again
	// by soft matching (soft.go), and SoftWeight what that adds to a
	// fused score of at most 1.
	SoftDepth  int
	SoftWeight float64

	// QueryWords is the query's budget: a query of more words is searched
	// by its first and last QueryWords/2 (query.go).
	QueryWords int

	Ablate Ablation
}

// Ablation switches parts of the ranking off, to measure what each is
// worth; the zero value switches nothing off.
type Ablation struct {
	IDF    bool // every word weighs the same, however common
	Fields bool // every field weighs the same
	Stem   bool // words are matched as written
	Stop   bool // stop words are indexed and searched
	Params bool // parameters are not indexed
	Typo   bool // no typo, prefix or fuzzy matches
}

// Defaults returns the options codebridge searches with (without an
// Embedder, which the caller adds).
func Defaults() Options {
	return Options{
		Weights:       Weights{Name: 2, Title: 2, ParamNames: 1, ParamText: 1, Description: 1, Server: 1},
		K1:            1.2,
		B:             0.75,
		Typo:          0.4,
		Prefix:        0.5,
		Fuzzy:         0.5,
		Fusion:        FuseWeighted,
		RRFK:          60,
		SemanticDepth: 100,
		SemanticFloor: 0.2,
		LexicalWeight: 0.7,
		SoftDepth:     20,
		SoftWeight:    1,
		QueryWords:    64,
	}
}

// Searcher builds indexes with one set of options and keeps what they
// cost to compute: stems, tool vectors (by definition hash) and the
// indexes of the last catalogues searched. It is safe for concurrent use.
type Searcher struct {
	opts Options
	text *analyser

	mu      sync.Mutex
	indexes []*Index // most recently used first
	vectors map[[32]byte][]float32
}

// cachedIndexes is how many catalogues' indexes a Searcher keeps: one per
// set of visible tools in use at once (sessions under different policies).
const cachedIndexes = 4

// New returns a Searcher with opts.
func New(opts Options) *Searcher {
	return &Searcher{
		opts:    opts,
		text:    &analyser{stem: !opts.Ablate.Stem, stop: !opts.Ablate.Stop},
		vectors: map[[32]byte][]float32{},
	}
}

// Options returns the Searcher's options.
func (s *Searcher) Options() Options { return s.opts }

// Index returns the index of docs, built now or kept from an earlier call
// with the same docs (the same pointers in the same order).
func (s *Searcher) Index(docs []*Analysed) *Index {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.indexes {
		if slices.Equal(x.docs, docs) {
			copy(s.indexes[1:i+1], s.indexes[:i])
			s.indexes[0] = x
			return x
		}
	}
	x := s.build(slices.Clone(docs))
	if len(s.indexes) == cachedIndexes {
		s.indexes = s.indexes[:cachedIndexes-1]
	}
	s.indexes = append([]*Index{x}, s.indexes...)
	s.pruneVectors()
	return x
}

// Result is the answer to a query: the hits, best first, and what was cut
// from the query, if anything.
type Result struct {
	Hits []Hit
	Cut  Cut
}

// Hit is one ranked doc: its position in the docs the index was built
// from, and its score (higher is better; comparable within one result).
type Hit struct {
	Doc   int
	Score float64
}

// Search ranks the index's docs for query and returns the best limit of
// them (all that match when limit <= 0). A doc matches when a query word
// matches one of its words (exactly, by stem, or by typo or prefix) or,
// with an Embedder, when it is among the semantic ranking's best. A query
// of stop words alone matches nothing.
func (x *Index) Search(query string, limit int) Result {
	q := x.s.bound(query)
	r := Result{Cut: q.cut}
	lex, terms := x.lexical(q.words)
	if terms == 0 {
		return r // nothing but stop words: nothing to find
	}
	sem := x.semantic(q.text)
	r.Hits = x.s.fuse(lex, sem, len(x.docs))
	x.soft(q.words, r.Hits)
	if limit > 0 && len(r.Hits) > limit {
		r.Hits = r.Hits[:limit]
	}
	return r
}
