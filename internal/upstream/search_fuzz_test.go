package upstream

import (
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzRank feeds Rank any query, and a tool whose name and description are
// as odd as the query: it never panics, returns at most limit hits, best
// first, with finite scores, each for a tool of the catalogue.
func FuzzRank(f *testing.F) {
	for _, s := range []string{"read file", "calender evnts", "", "   ", "ÄÖÜ ß", "a\x00b", strings.Repeat("x", 300), "_-_.", "ﬁle", "𝔣𝔦𝔩𝔢"} {
		f.Add(s, s, 3)
	}
	f.Fuzz(func(t *testing.T, query, odd string, limit int) {
		limit %= 20
		entries := append(catalogue(), Entry{Server: odd, Tool: &mcp.Tool{Name: odd, Description: odd + " " + query}})
		hits := Rank(query, entries, limit)
		if limit > 0 && len(hits) > limit {
			t.Fatalf("%d hits for limit %d", len(hits), limit)
		}
		for i, h := range hits {
			if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
				t.Fatalf("hit %d has score %v", i, h.Score)
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Fatalf("hit %d scores %v, above hit %d's %v", i, h.Score, i-1, hits[i-1].Score)
			}
			if h.Tool == nil {
				t.Fatalf("hit %d has no tool", i)
			}
		}
	})
}
