package toolsearch

import (
	"sort"
	"strings"
)

// lexical returns the BM25F score of every doc for the query's words
// (0 for a doc that matches none), and how many distinct terms the words
// give. Each distinct term counts once. A word
// whose term no doc has may match words of the catalogue by a typo or as
// their prefix: each doc then gets the best such match's score, times
// Options.Typo or Options.Prefix.
func (x *Index) lexical(words []string) ([]float32, int) {
	scores := make([]float32, len(x.docs))
	seen := make(map[string]bool, len(words))
	terms := 0
	for _, w := range words {
		t := x.s.text.term(w)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		terms++
		if ps, ok := x.postings[t]; ok {
			for _, p := range ps {
				scores[p.doc] += p.impact
			}
			continue
		}
		if !x.s.opts.Ablate.Typo {
			x.near(w, scores)
		}
	}
	return scores, terms
}

// near adds to scores the best near match of w in each doc: the terms of
// the catalogue's words that w is a typo of, or the start of.
func (x *Index) near(w string, scores []float32) {
	weight := map[string]float32{} // term -> the weight of its best near match
	for _, i := range x.prefixed(w) {
		t := x.vocab[i].term
		weight[t] = max(weight[t], float32(x.s.opts.Prefix))
	}
	if n := len(w); n >= minTypoLen {
		d := maxTypos(w)
		for l := n - d; l <= n+d; l++ {
			for _, i := range x.byLen[l] {
				if typoDistance(w, x.vocab[i].word) <= d {
					t := x.vocab[i].term
					weight[t] = max(weight[t], float32(x.s.opts.Typo))
				}
			}
		}
	}
	if len(weight) == 0 {
		return
	}
	best := map[int32]float32{}
	for t, wt := range weight {
		for _, p := range x.postings[t] {
			best[p.doc] = max(best[p.doc], wt*p.impact)
		}
	}
	for doc, v := range best {
		scores[doc] += v
	}
}

// minPrefixLen and minTypoLen are the shortest words matched as a prefix
// or with a typo: shorter ones would match too much.
const (
	minPrefixLen = 3
	minTypoLen   = 4
	maxPrefixed  = 32 // the most words one prefix matches
)

// prefixed returns the positions in the vocabulary of the words that
// start with w (not w itself), at most maxPrefixed of them.
func (x *Index) prefixed(w string) []int {
	if len(w) < minPrefixLen {
		return nil
	}
	i := sort.Search(len(x.vocab), func(i int) bool { return x.vocab[i].word >= w })
	var out []int
	for ; i < len(x.vocab) && strings.HasPrefix(x.vocab[i].word, w) && len(out) < maxPrefixed; i++ {
		if x.vocab[i].word != w {
			out = append(out, i)
		}
	}
	return out
}

// maxTypos is how many edits a word of w's length may have.
func maxTypos(w string) int {
	if len(w) >= 8 {
		return 2
	}
	return 1
}

// typoDistance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and adjacent transpositions) over
// bytes, which is enough to catch typos in the ASCII words of tool names.
// It allocates nothing (words are at most maxWordLen runes).
func typoDistance(a, b string) int {
	const m = maxWordLen * 4
	if len(a) > m || len(b) > m {
		return m
	}
	var rows [3][m + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
