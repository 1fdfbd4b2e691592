package toolsearch

import (
	"cmp"
	"slices"
)

// maxSoftWords bounds the query words that soft matching weighs.
const maxSoftWords = 16

// soft scores the first Options.SoftDepth hits again by soft matching:
// each distinct query word (up to maxSoftWords) is matched to the word of
// the doc closest to it in meaning (the cosine of their Embedder vectors:
// "save" and "write", "remove" and "delete"), and the closeness, weighted
// by the query word's IDF, averaged over the query's words and times
// Options.SoftWeight, is added to the hit's score; those hits are then
// put in order again. It is the lexical ranking with the meaning of words
// in place of their spelling, made affordable by looking only at the few
// docs the other rankings put first. Words are embedded as they are
// needed, so an index costs no memory for them.
func (x *Index) soft(words []string, hits []Hit) {
	n := min(x.s.opts.SoftDepth, len(hits))
	if x.vecs == nil || n < 2 || x.s.opts.SoftWeight == 0 {
		return
	}
	type queryWord struct {
		v   []float32
		idf float64
	}
	var qs []queryWord
	total := 0.0
	seen := map[string]bool{}
	for _, w := range words {
		t := x.s.text.term(w)
		if t == "" || seen[t] || len(qs) == maxSoftWords {
			continue
		}
		seen[t] = true
		if v := unit(x.s.opts.Embedder.Embed(w)); v != nil {
			idf := x.idf(max(len(x.postings[t]), 1))
			qs = append(qs, queryWord{v, idf})
			total += idf
		}
	}
	if len(qs) == 0 {
		return
	}
	// Each distinct word of the docs is embedded, and compared with each
	// query word, once.
	close := map[string][]float32{} // word -> its cosine with each query word
	for i := range n {
		d := x.docs[hits[i].Doc]
		best := make([]float32, len(qs))
		for _, wt := range d.words {
			c, ok := close[wt.word]
			if !ok {
				c = make([]float32, len(qs))
				if v := unit(x.s.opts.Embedder.Embed(wt.word)); v != nil {
					for j, q := range qs {
						c[j] = dot(q.v, v)
					}
				}
				close[wt.word] = c
			}
			for j := range best {
				best[j] = max(best[j], c[j])
			}
		}
		sum := 0.0
		for j, q := range qs {
			sum += q.idf * float64(best[j])
		}
		hits[i].Score += x.s.opts.SoftWeight * sum / total
	}
	slices.SortStableFunc(hits[:n], func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
}
