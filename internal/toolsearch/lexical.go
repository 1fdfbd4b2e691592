package toolsearch

import (
	"math/bits"
	"sort"
	"strings"

	"github.com/sahilm/fuzzy"
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
	var unmatched []string
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
		if !x.s.opts.Ablate.Typo && !x.near(w, scores) && len(unmatched) < maxFuzzyWords {
			unmatched = append(unmatched, w)
		}
	}
	for _, w := range unmatched {
		x.fuzzy(w, scores)
	}
	return scores, terms
}

// maxFuzzyWords bounds how many words of a query are matched against the
// tools' names as subsequences (fuzzy), the costliest match.
const maxFuzzyWords = 4

// fuzzy adds to scores a match of w, a word that matched no word of the
// catalogue, as a subsequence of tool names (sahilm/fuzzy: "getsum" in
// get_sum, "rdfile" in read_file), where the letters it matches span at
// most half as much again as w: a tool it matches scores
// Options.Fuzzy times the IDF of the match (how few tools it matches).
func (x *Index) fuzzy(w string, scores []float32) {
	if len(w) < minTypoLen {
		return
	}
	// Only names that have every letter of w can have it as a subsequence.
	need := letters(w)
	var cands []string
	var at []int
	for i, m := range x.nameMasks {
		if need&^m == 0 {
			cands = append(cands, x.names[i])
			at = append(at, i)
		}
	}
	var hits []int
	for _, m := range fuzzy.FindNoSort(w, cands) {
		if n := len(m.MatchedIndexes); n > 0 && m.MatchedIndexes[n-1]-m.MatchedIndexes[0] < len(w)+len(w)/2 {
			hits = append(hits, at[m.Index])
		}
	}
	if len(hits) == 0 {
		return
	}
	v := float32(x.s.opts.Fuzzy * x.idf(len(hits)))
	for _, d := range hits {
		scores[d] += v
	}
}

// near adds to scores the best near match of w in each doc: the terms of
// the catalogue's words that w is a typo of, or the start of. It reports
// whether there was any.
func (x *Index) near(w string, scores []float32) bool {
	weight := map[string]float32{} // term -> the weight of its best near match
	for _, i := range x.prefixed(w) {
		t := x.vocab[i].term
		weight[t] = max(weight[t], float32(x.s.opts.Prefix))
	}
	// A term of the catalogue that w's term starts with ("relat" of
	// relations, for relationship) also matches, if long enough to mean
	// something by itself.
	if t := x.s.text.term(w); len(t) > minStemPrefixLen {
		for l := minStemPrefixLen; l < len(t); l++ {
			if _, ok := x.postings[t[:l]]; ok {
				weight[t[:l]] = max(weight[t[:l]], float32(x.s.opts.Prefix))
			}
		}
	}
	if n := len(w); n >= minTypoLen && n <= maxTypoLen {
		d := maxTypos(w)
		mask := letters(w)
		for l := n - d; l <= n+d; l++ {
			for _, i := range x.byLen[l] {
				// An edit adds or removes at most one letter of each kind.
				if bits.OnesCount64(mask^x.masks[i]) > 2*d || typoDistance(w, x.vocab[i].word, d) > d {
					continue
				}
				t := x.vocab[i].term
				weight[t] = max(weight[t], float32(x.s.opts.Typo))
			}
		}
	}
	if len(weight) == 0 {
		return false
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
	return true
}

// minPrefixLen and minTypoLen are the shortest words matched as a prefix
// or with a typo: shorter ones would match too much.
const (
	minPrefixLen = 3
	// minStemPrefixLen is the shortest term that a longer query term
	// matches by starting with it.
	minStemPrefixLen = 5
	minTypoLen       = 4
	maxTypoLen       = 32 // bytes; no typo of a longer word is looked for
	maxPrefixed      = 32 // the most words one prefix matches
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

// letters is the set of letters and digits of w (others fold into one).
func letters(w string) uint64 {
	var m uint64
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case 'a' <= c && c <= 'z':
			m |= 1 << (c - 'a')
		case '0' <= c && c <= '9':
			m |= 1 << (26 + c - '0')
		default:
			m |= 1 << 63
		}
	}
	return m
}

// typoDistance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and adjacent transpositions) over
// bytes, which is enough for the ASCII words of tool names, or a number
// above limit once it is sure to be. Words longer than maxTypoLen bytes
// are not compared.
func typoDistance(a, b string, limit int) int {
	if len(a) > maxTypoLen || len(b) > maxTypoLen {
		return maxTypoLen + 1
	}
	var rows [3][maxTypoLen + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	prevLeast := 0 // the least value of the row before
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		least := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			least = min(least, cur[j])
		}
		// No later value is below the least of this row or one more than
		// the least of the row before (a transposition reaches back two
		// rows, at a cost of one).
		if bound := min(least, prevLeast+1); bound > limit {
			return bound
		}
		prevLeast = least
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
