package toolsearch

import (
	"cmp"
	"slices"
)

// Fusion is a way of fusing the lexical and semantic rankings.
type Fusion int

const (
	// FuseRRF is reciprocal rank fusion: a doc scores 1/(k+r) for its
	// rank r in each ranking it is in, scaled so that the first of both
	// scores 1.
	FuseRRF Fusion = iota
	// FuseWeighted adds the lexical score over the best one, times
	// Options.LexicalWeight, to the cosine above SemanticFloor over the
	// best one above it, times the rest.
	FuseWeighted
	// FuseLexical ranks by the lexical score alone.
	FuseLexical
	// FuseSemantic ranks by the semantic score alone.
	FuseSemantic
)

// fuse orders the docs of n that either ranking finds: by lexical score
// (lex, 0: no match) and cosine (sem, nil: no semantic ranking).
func (s *Searcher) fuse(lex, sem []float32, n int) []Hit {
	lexRank := ranking(lex, 0, n)
	var semRank []int
	if sem != nil {
		semRank = ranking(sem, float32(s.opts.SemanticFloor), s.opts.SemanticDepth)
	}
	switch {
	case sem == nil || s.opts.Fusion == FuseLexical:
		return scored(lexRank, lex)
	case s.opts.Fusion == FuseSemantic:
		return scored(semRank, sem)
	case s.opts.Fusion == FuseWeighted:
		return s.weighted(lexRank, semRank, lex, sem)
	}
	return s.rrf(lexRank, semRank)
}

// ranking returns the docs whose score is above floor, best first (ties
// in doc order), at most depth of them (all with depth <= 0).
func ranking(score []float32, floor float32, depth int) []int {
	var out []int
	for i, v := range score {
		if v > floor {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if depth > 0 && len(out) > depth {
		out = out[:depth]
	}
	return out
}

// scored returns the hits of one ranking with their scores.
func scored(rank []int, score []float32) []Hit {
	hits := make([]Hit, len(rank))
	for i, d := range rank {
		hits[i] = Hit{Doc: d, Score: float64(score[d])}
	}
	return hits
}

// rrf fuses two rankings by reciprocal rank.
func (s *Searcher) rrf(lexRank, semRank []int) []Hit {
	k := s.opts.RRFK
	fused := map[int]float64{}
	for r, d := range lexRank {
		fused[d] += 1 / (k + float64(r+1))
	}
	for r, d := range semRank {
		fused[d] += 1 / (k + float64(r+1))
	}
	best := 2 / (k + 1)
	return sortHits(fused, best)
}

// weighted fuses the rankings by their scores, each over its best.
func (s *Searcher) weighted(lexRank, semRank []int, lex, sem []float32) []Hit {
	fused := map[int]float64{}
	a := s.opts.LexicalWeight
	if len(lexRank) > 0 {
		top := float64(lex[lexRank[0]])
		for _, d := range lexRank {
			fused[d] += a * float64(lex[d]) / top
		}
	}
	if len(semRank) > 0 {
		floor := s.opts.SemanticFloor
		top := float64(sem[semRank[0]]) - floor
		for _, d := range semRank {
			fused[d] += (1 - a) * (float64(sem[d]) - floor) / top
		}
	}
	return sortHits(fused, 1)
}

// sortHits returns the docs of fused, best first (ties in doc order),
// their scores divided by best.
func sortHits(fused map[int]float64, best float64) []Hit {
	hits := make([]Hit, 0, len(fused))
	for d, v := range fused {
		hits = append(hits, Hit{Doc: d, Score: v / best})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	return hits
}
