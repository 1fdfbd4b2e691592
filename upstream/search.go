package upstream

import (
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sahilm/fuzzy"
)

// Entry is one tool in the search catalogue, or one resource, resource
// template or prompt (offers.go): those have a Kind, their name and
// description in Tool, and a resource its URI (a template its URI
// template).
type Entry struct {
	Server string
	Tool   *mcp.Tool
	Kind   string // "" for a tool, else KindResource, KindTemplate or KindPrompt
	URI    string
	words  *toolWords // the words Rank matches; computed on first need
}

// toolWords are the lower-case words of a tool's name and description.
type toolWords struct{ name, desc, server []string }

func newToolWords(server string, t *mcp.Tool) *toolWords {
	return &toolWords{name: words(t.Name + " " + t.Title), desc: words(t.Description), server: words(server)}
}

// wordIndex keeps the search words of a server's tool list, computed on
// the first search of each list.
type wordIndex struct {
	mu    sync.Mutex
	words []*toolWords
	first *mcp.Tool // the first tool of the list words was computed for
}

// of returns the search words of tools, listed by server, one per tool.
func (x *wordIndex) of(server string, tools []*mcp.Tool) []*toolWords {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.words) != len(tools) || (len(tools) > 0 && x.first != tools[0]) {
		x.words, x.first = make([]*toolWords, len(tools)), nil
		if len(tools) > 0 {
			x.first = tools[0]
		}
		for i, t := range tools {
			x.words[i] = newToolWords(server, t)
		}
	}
	return x.words
}

// Hit is one search result.
type Hit struct {
	Entry
	Score float64
}

// Unavailable names a server that could not be searched, and why.
type Unavailable struct {
	Server string
	Err    error
}

// Rank orders entries by how well they match query and returns the best
// limit of them (all matches when limit <= 0). It combines word matching
// over tool names, server names and descriptions (exact words, prefixes,
// simple plurals and one- or two-letter typos) with sahilm/fuzzy's
// subsequence score over the tool name, so that "calendar events",
// "read fi" and "calender" all find what they mean. Entries that match no
// query word score zero and are left out.
func Rank(query string, entries []Entry, limit int) []Hit {
	qwords := words(query)
	if len(qwords) == 0 {
		return nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Tool.Name
	}
	fuzzyScore := make([]int, len(entries))
	best := 0
	for _, m := range fuzzy.FindNoSort(strings.Join(qwords, ""), names) {
		fuzzyScore[m.Index] = m.Score
		best = max(best, m.Score)
	}

	var hits []Hit
	for i, e := range entries {
		w := e.words
		if w == nil {
			w = newToolWords(e.Server, e.Tool)
		}
		score, matched := 0.0, 0
		for _, q := range qwords {
			s := max(match(q, w.name)*10, match(q, w.desc)*4, match(q, w.server)*3)
			if s > 0 {
				matched++
			}
			score += s
		}
		if matched == 0 {
			continue
		}
		// Reward covering the whole query, then closeness as a fuzzy
		// subsequence of the name, then shorter names (more specific).
		score += 6 * float64(matched) / float64(len(qwords))
		if best > 0 && fuzzyScore[i] > 0 {
			score += 2 * float64(fuzzyScore[i]) / float64(best)
		}
		score -= float64(len(w.name)) * 0.05
		hits = append(hits, Hit{Entry: e, Score: score})
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// match scores how well query word q matches the best of ws: 1 for the
// same word (or its singular), 0.8 for a prefix, 0.6 for a near miss.
func match(q string, ws []string) float64 {
	best := 0.0
	qs := singular(q)
	for _, w := range ws {
		switch {
		case w == q || singular(w) == qs:
			return 1
		case len(q) >= 3 && strings.HasPrefix(w, q), len(w) >= 4 && strings.HasPrefix(q, w):
			best = max(best, 0.8)
		case len(q) >= 4 && len(w) >= 4 && abs(len(q)-len(w)) <= maxTypos(q) && typoDistance(q, w) <= maxTypos(q):
			best = max(best, 0.6)
		}
	}
	return best
}

func maxTypos(q string) int {
	if len(q) >= 8 {
		return 2
	}
	return 1
}

// singular strips common English plural endings, well enough for tool
// names: entities -> entity, files -> file, boxes -> box.
func singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "ches")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// words splits s into lower-case words at non-letters and at camelCase
// boundaries: "readFile", "read_file" and "read-file" all give read, file.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
			cur = append(cur, unicode.ToLower(r))
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return out
}

// maxTypoLen bounds the words typoDistance compares; longer ones are not
// typo-matched (no real tool word is that long).
const maxTypoLen = 32

// typoDistance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and adjacent transpositions). It
// allocates nothing: it runs for every word of every tool on each search.
func typoDistance(a, b string) int {
	var ra, rb [maxTypoLen]rune
	na, nb := 0, 0
	for _, r := range a {
		if na == maxTypoLen {
			return maxTypoLen
		}
		ra[na], na = r, na+1
	}
	for _, r := range b {
		if nb == maxTypoLen {
			return maxTypoLen
		}
		rb[nb], nb = r, nb+1
	}
	if d := na - nb; d > 2 || d < -2 {
		return 3
	}
	var rows [3][maxTypoLen + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= nb; j++ {
		prev[j] = j
	}
	for i := 1; i <= na; i++ {
		cur[0] = i
		for j := 1; j <= nb; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[nb]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
