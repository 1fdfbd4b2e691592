package main

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/toolsearch"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The search section measures codebridge's ranking (upstream.Rank, which
// the sandbox's search_tools and `codebridge search` call) in this
// process, on two public sets copied into testdata/search (README there):
//
//   - mcpproxy-go's golden set v1: 47 graded queries over the 45 tools of
//     seven reference servers; a tool of relevance >= 1 is a right one.
//   - BFCL v4 live multiple: 1,053 questions, each with the one function
//     its possible answer calls, searched among every function of the
//     BFCL v4 files (2,886, deduplicated by name and description) dealt
//     into 37 servers.
//
// R@k is the share of a query's right tools in the first k, averaged over
// the queries (as mcpproxy-go scores it); MRR the mean of 1/rank of the
// first right tool. Beside each, a plain BM25 (one field: name,
// description and parameters; lower-cased words; no stemming, stop words
// or fields; k1 1.2, b 0.75) ranks the same catalogue for the same queries, and for
// mcpproxy its own committed BM25 baseline is shown. Latency is of
// upstream.Rank over both catalogues at once (2,931 tools), its index
// built: for each set's queries as written, and for long ones (a pasted
// task of thousands of words, a base64 blob, a question at the end).
// Indexing is a new catalogue of the same 2,931 tools with nothing
// cached: analysed, indexed and embedded.
//
// With -search-ablation, each part of the ranking is switched off in turn
// and what R@5 loses is shown, with ten queries of each set still ranked
// wrong (stderr).

// searchSet is a catalogue and its queries with their right answers.
type searchSet struct {
	name    string
	entries []upstream.Entry
	ids     []string // one per entry
	queries []searchQuery
}

type searchQuery struct {
	text  string
	right map[string]bool // ids of the right tools
}

// searchData is where the sets are, in the repository.
const searchData = "testdata/search"

// measureSearch measures the ranking's quality on both sets, beside
// plain BM25, then its latency and indexing time.
func (e *env) measureSearch(ctx context.Context) ([]row, error) {
	proxy, baseline, err := loadMCPProxy(filepath.Join(e.repo, searchData, "mcpproxy"))
	if err != nil {
		return nil, err
	}
	bfcl, err := loadBFCL(filepath.Join(e.repo, searchData, "bfcl"))
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, set := range []struct {
		s      *searchSet
		target float64
		note   string
	}{
		{proxy, 0.95, fmt.Sprintf("; mcpproxy-go's committed BM25: R@5 %.2f", baseline)},
		{bfcl, 0.90, ""},
	} {
		ours := score(set.s, rankWith(set.s, upstream.Rank))
		bm := score(set.s, plainBM25(set.s))
		rows = append(rows, row{
			name:   fmt.Sprintf("Search R@5, %s (%s tools, %s queries)", set.s.name, commas(len(set.s.entries)), commas(len(set.s.queries))),
			value:  fmt.Sprintf("%.2f (R@1 %.2f, MRR %.2f)", ours.r5, ours.r1, ours.mrr),
			spread: fmt.Sprintf("plain BM25: R@5 %.2f (R@1 %.2f, MRR %.2f)%s", bm.r5, bm.r1, bm.mrr, set.note),
			target: fmt.Sprintf("≥ %.2f and ≥ BM25 + 0.10", set.target),
			ok:     ours.r5 >= set.target && ours.r5 >= bm.r5+0.10,
		})
	}
	rows = append(rows, searchLatency(proxy, bfcl)...)
	rows = append(rows, searchIndexing(proxy, bfcl))
	if e.searchAblation {
		rows = append(rows, ablation(proxy, bfcl)...)
	}
	return rows, ctx.Err()
}

// ranker returns the ids of a query's best k tools, best first.
type ranker func(query string, k int) []string

func rankWith(s *searchSet, rank func(string, []upstream.Entry, int) []upstream.Hit) ranker {
	pos := map[*mcp.Tool]int{}
	for i, e := range s.entries {
		pos[e.Tool] = i
	}
	return func(q string, k int) []string {
		var out []string
		for _, h := range rank(q, s.entries, k) {
			out = append(out, s.ids[pos[h.Tool]])
		}
		return out
	}
}

// quality is R@1, R@5 and MRR over a set's queries.
type quality struct{ r1, r5, mrr float64 }

func score(s *searchSet, rank ranker) quality {
	var q quality
	for _, query := range s.queries {
		got := rank(query.text, 10)
		q.r1 += recallAt(got, query.right, 1)
		q.r5 += recallAt(got, query.right, 5)
		for i, id := range got {
			if query.right[id] {
				q.mrr += 1 / float64(i+1)
				break
			}
		}
	}
	n := float64(len(s.queries))
	return quality{q.r1 / n, q.r5 / n, q.mrr / n}
}

// recallAt is the share of right found in the first k of got (a tool
// found twice counts once).
func recallAt(got []string, right map[string]bool, k int) float64 {
	found := map[string]bool{}
	for i, id := range got {
		if i < k && right[id] {
			found[id] = true
		}
	}
	return float64(len(found)) / float64(len(right))
}

// searchLatency times upstream.Rank over both catalogues at once, the
// index built first (as after a catalogue's first search).
func searchLatency(sets ...*searchSet) []row {
	var all []upstream.Entry
	var short []string
	for _, s := range sets {
		all = append(all, s.entries...)
		for _, q := range s.queries {
			short = append(short, q.text)
		}
	}
	upstream.Rank("warm up", all, 5)
	long := longQueries(short, 200)
	var rows []row
	for _, c := range []struct {
		name    string
		queries []string
	}{{"short queries (each set's, as written)", short}, {"long queries (a pasted task of ~5,000 words and a 48 KiB base64 blob, then a question)", long}} {
		var lat sample
		for _, q := range c.queries {
			t := time.Now()
			upstream.Rank(q, all, 5)
			lat = append(lat, time.Since(t).Seconds())
		}
		rows = append(rows, row{
			name:   fmt.Sprintf("Search latency at %s tools, %s", commas(len(all)), c.name),
			value:  fmt.Sprintf("p50 %s, p99 %s", fmtSeconds(lat.median()), fmtSeconds(lat.p99())),
			spread: fmt.Sprintf("%s queries, max %s", commas(len(lat)), fmtSeconds(lat.max())),
			target: "p50 ≤ 10 ms, p99 ≤ 50 ms",
			ok:     lat.median() <= 0.010 && lat.p99() <= 0.050,
		})
	}
	return rows
}

// longQueries makes n long queries: thousands of words of other queries,
// a base64 blob, and one query's question at the end.
func longQueries(short []string, n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	blob := make([]byte, 36<<10)
	for i := range blob {
		blob[i] = byte(r.IntN(256))
	}
	b64 := base64.StdEncoding.EncodeToString(blob)
	out := make([]string, n)
	for i := range out {
		var sb strings.Builder
		for sb.Len() < 30_000 {
			sb.WriteString(short[r.IntN(len(short))] + "\n")
		}
		sb.WriteString(b64 + "\n" + short[r.IntN(len(short))])
		out[i] = sb.String()
	}
	return out
}

// searchIndexing times indexing both catalogues as new tools: a Searcher
// with nothing cached analyses, indexes and embeds them.
func searchIndexing(sets ...*searchSet) row {
	var tools []toolsearch.Doc
	for _, s := range sets {
		for _, e := range s.entries {
			tools = append(tools, docOf(e))
		}
	}
	var took sample
	for range 3 {
		runtime.GC()
		t := time.Now()
		s := toolsearch.New(upstream.SearchOptions())
		docs := make([]*toolsearch.Analysed, len(tools))
		for i, d := range tools {
			docs[i] = s.Analyse(d)
		}
		s.Index(docs).Search("warm up", 1)
		took = append(took, time.Since(t).Seconds())
	}
	return row{
		name:   fmt.Sprintf("Search indexing of %s new tools (words, stems, index, vectors)", commas(len(tools))),
		value:  fmtSeconds(took.median()),
		spread: spread(took, fmtSeconds) + ", 3 runs; cached after",
		target: "≤ 10 s", ok: took.median() <= 10,
	}
}

// docOf is an entry as upstream gives it to toolsearch.
func docOf(e upstream.Entry) toolsearch.Doc {
	return toolsearch.Doc{Server: e.Server, Name: e.Tool.Name, Title: e.Tool.Title, Description: e.Tool.Description, Params: toolsearch.Params(e.Tool.InputSchema)}
}

// plainBM25 ranks a set's tools by BM25 over one field, the whole
// definition as text (name, description, and the parameters' names,
// descriptions and enum values), in lower-cased words split at anything
// else; a query word counts as often as it is written.
func plainBM25(s *searchSet) ranker {
	const k1, b = 1.2, 0.75
	split := func(text string) []string {
		return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
			return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r > 127)
		})
	}
	type posting struct{ doc, tf int }
	postings := map[string][]posting{}
	lens := make([]float64, len(s.entries))
	avg := 0.0
	for i, e := range s.entries {
		text := e.Tool.Name + " " + e.Tool.Description
		for _, p := range toolsearch.Params(e.Tool.InputSchema) {
			text += " " + p.Name + " " + p.Description + " " + strings.Join(p.Enum, " ")
		}
		tf := map[string]int{}
		ws := split(text)
		for _, w := range ws {
			tf[w]++
		}
		for w, n := range tf {
			postings[w] = append(postings[w], posting{i, n})
		}
		lens[i] = float64(len(ws))
		avg += lens[i]
	}
	avg /= float64(len(s.entries))
	n := float64(len(s.entries))
	return func(q string, k int) []string {
		scores := make([]float32, len(s.entries))
		for _, w := range split(q) {
			ps := postings[w]
			df := float64(len(ps))
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			for _, p := range ps {
				f := float64(p.tf)
				scores[p.doc] += float32(idf * f * (k1 + 1) / (f + k1*(1-b+b*lens[p.doc]/avg)))
			}
		}
		var out []string
		for _, i := range topK(scores, k) {
			out = append(out, s.ids[i])
		}
		return out
	}
}

// topK returns the positions of the k best positive scores, best first
// (ties in order).
func topK(scores []float32, k int) []int {
	var out []int
	for i, v := range scores {
		if v <= 0 {
			continue
		}
		at := len(out)
		for at > 0 && scores[out[at-1]] < v {
			at--
		}
		if at < k {
			out = append(out[:at], append([]int{i}, out[at:]...)...)
			if len(out) > k {
				out = out[:k]
			}
		}
	}
	return out
}

// loadMCPProxy reads mcpproxy-go's corpus, golden queries and committed
// BM25 R@5.
func loadMCPProxy(dir string) (*searchSet, float64, error) {
	var corpus struct {
		Tools []struct {
			Server, Tool, Description string
			ID                        string `json:"tool_id"`
		}
	}
	var golden struct {
		Queries []struct {
			Query  string
			Labels []struct {
				ID        string `json:"tool_id"`
				Relevance int
			}
		}
	}
	var baseline struct {
		RecallAt map[string]float64 `json:"recall_at"`
	}
	for name, v := range map[string]any{"corpus_v1.tools.json": &corpus, "retrieval_golden_v1.json": &golden, "baseline_v1.json": &baseline} {
		if err := readJSON(filepath.Join(dir, name), v); err != nil {
			return nil, 0, err
		}
	}
	s := &searchSet{name: "mcpproxy-go golden v1"}
	for _, t := range corpus.Tools {
		s.entries = append(s.entries, upstream.Entry{Server: t.Server, Tool: &mcp.Tool{Name: t.Tool, Description: t.Description}})
		s.ids = append(s.ids, t.ID)
	}
	for _, q := range golden.Queries {
		sq := searchQuery{text: q.Query, right: map[string]bool{}}
		for _, l := range q.Labels {
			if l.Relevance >= 1 {
				sq.right[l.ID] = true
			}
		}
		s.queries = append(s.queries, sq)
	}
	return s, baseline.RecallAt["5"], nil
}

// loadBFCL reads the pooled BFCL functions and the live multiple
// questions; a question's right tool is the function its possible answer
// calls, by name: the pool has several functions of some names (the same
// API described in other words), and any of them is the right one.
func loadBFCL(dir string) (*searchSet, error) {
	var pool []struct {
		Server, Name, Description string
		Parameters                json.RawMessage
	}
	if err := readJSON(filepath.Join(dir, "functions.json.gz"), &pool); err != nil {
		return nil, err
	}
	s := &searchSet{name: "BFCL v4 live multiple, all v4 functions pooled"}
	for _, f := range pool {
		t := &mcp.Tool{Name: f.Name, Description: f.Description}
		if len(f.Parameters) > 0 {
			t.InputSchema = f.Parameters
		}
		s.entries = append(s.entries, upstream.Entry{Server: f.Server, Tool: t})
		s.ids = append(s.ids, f.Name)
	}
	type question struct {
		ID       string
		Question [][]struct{ Role, Content string }
	}
	type answer struct {
		ID          string
		GroundTruth []map[string]json.RawMessage `json:"ground_truth"`
	}
	questions, err := readLines[question](filepath.Join(dir, "BFCL_v4_live_multiple.json.gz"))
	if err != nil {
		return nil, err
	}
	answers, err := readLines[answer](filepath.Join(dir, "possible_answer", "BFCL_v4_live_multiple.json.gz"))
	if err != nil {
		return nil, err
	}
	if len(answers) != len(questions) {
		return nil, fmt.Errorf("bfcl: %d questions, %d answers", len(questions), len(answers))
	}
	for i, q := range questions {
		if answers[i].ID != q.ID {
			return nil, fmt.Errorf("bfcl: question %s, answer %s", q.ID, answers[i].ID)
		}
		sq := searchQuery{right: map[string]bool{}}
		for _, turn := range q.Question {
			for _, m := range turn {
				if m.Role == "user" {
					sq.text = strings.TrimSpace(sq.text + "\n" + m.Content)
				}
			}
		}
		for _, call := range answers[i].GroundTruth {
			for name := range call {
				sq.right[name] = true
			}
		}
		if len(sq.right) == 0 {
			return nil, fmt.Errorf("bfcl: question %s: its answer calls no function", q.ID)
		}
		s.queries = append(s.queries, sq)
	}
	return s, nil
}

// readJSON decodes the JSON of path (gzipped if it ends in .gz).
func readJSON(path string, v any) error {
	r, closeAll, err := open(path)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readLines decodes the JSON lines of path (gzipped if it ends in .gz).
func readLines[T any](path string) ([]T, error) {
	r, closeAll, err := open(path)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	var out []T
	dec := json.NewDecoder(r)
	for {
		var v T
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
}

func open(path string) (io.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (the search sets are in the repository's %s)", err, searchData)
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, func() { f.Close() }, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return zr, func() { zr.Close(); f.Close() }, nil
}

// ablation switches each part of the ranking off in turn and reports
// what R@5 becomes on each set; it prints ten queries of each set that
// the full ranking still ranks wrong, with what it ranked instead.
func ablation(sets ...*searchSet) []row {
	full := upstream.SearchOptions()
	parts := []struct {
		name string
		off  func(*toolsearch.Options)
	}{
		{"nothing (toolsearch as configured)", func(*toolsearch.Options) {}},
		{"IDF", func(o *toolsearch.Options) { o.Ablate.IDF = true }},
		{"field weights", func(o *toolsearch.Options) { o.Ablate.Fields = true }},
		{"stemming", func(o *toolsearch.Options) { o.Ablate.Stem = true }},
		{"stop words", func(o *toolsearch.Options) { o.Ablate.Stop = true }},
		{"parameters", func(o *toolsearch.Options) { o.Ablate.Params = true }},
		{"typo and prefix matches", func(o *toolsearch.Options) { o.Ablate.Typo = true }},
		{"the query budget", func(o *toolsearch.Options) { o.QueryWords = 1 << 20 }},
		{"soft matching of the first hits", func(o *toolsearch.Options) { o.SoftWeight = 0 }},
		{"semantic ranking and soft matching (lexical alone)", func(o *toolsearch.Options) { o.Fusion, o.SoftWeight = toolsearch.FuseLexical, 0 }},
		{"lexical ranking and soft matching (semantic alone)", func(o *toolsearch.Options) { o.Fusion, o.SoftWeight = toolsearch.FuseSemantic, 0 }},
		{"the weighted sum (reciprocal rank fusion, k 60, instead)", func(o *toolsearch.Options) { o.Fusion, o.RRFK = toolsearch.FuseRRF, 60 }},
		{"the weighted sum (reciprocal rank fusion, k 10, instead)", func(o *toolsearch.Options) { o.Fusion, o.RRFK = toolsearch.FuseRRF, 10 }},
	}
	base := make([]float64, len(sets))
	var rows []row
	for i, p := range parts {
		opts := full
		p.off(&opts)
		var vs []string
		for j, s := range sets {
			r5 := score(s, searchRanker(s, opts)).r5
			if i == 0 {
				base[j] = r5
				vs = append(vs, fmt.Sprintf("%s R@5 %.3f", s.name, r5))
				continue
			}
			vs = append(vs, fmt.Sprintf("%s R@5 %.3f (%+.3f)", s.name, r5, r5-base[j]))
		}
		rows = append(rows, row{name: "Search ablation: without " + p.name, value: strings.Join(vs, "; "), info: true})
	}
	for _, s := range sets {
		printMisses(s, searchRanker(s, full), 10)
	}
	return rows
}

// searchRanker ranks a set's tools with a toolsearch Searcher of opts.
func searchRanker(s *searchSet, opts toolsearch.Options) ranker {
	ts := toolsearch.New(opts)
	docs := make([]*toolsearch.Analysed, len(s.entries))
	for i, e := range s.entries {
		docs[i] = ts.Analyse(docOf(e))
	}
	x := ts.Index(docs)
	return func(q string, k int) []string {
		var out []string
		for _, h := range x.Search(q, k).Hits {
			out = append(out, s.ids[h.Doc])
		}
		return out
	}
}

// printMisses prints to stderr up to n queries whose right tools are not
// all in rank's first five, spread over the set, with what came first.
func printMisses(s *searchSet, rank ranker, n int) {
	name, copies := map[string]string{}, map[string]int{}
	for i, e := range s.entries {
		if copies[s.ids[i]]++; copies[s.ids[i]] == 1 {
			name[s.ids[i]] = e.Server + ":" + e.Tool.Name
		} else {
			name[s.ids[i]] = e.Tool.Name // one of several of that name
		}
	}
	var missed []int
	for i, q := range s.queries {
		if recallAt(rank(q.text, 5), q.right, 5) < 1 {
			missed = append(missed, i)
		}
	}
	fmt.Fprintf(os.Stderr, "\n%s: %d of %d queries miss a right tool in the first 5; %d of them:\n", s.name, len(missed), len(s.queries), min(n, len(missed)))
	for j := range min(n, len(missed)) {
		q := s.queries[missed[j*len(missed)/min(n, len(missed))]]
		var right, got []string
		for id := range q.right {
			right = append(right, name[id])
		}
		for _, id := range rank(q.text, 5) {
			got = append(got, name[id])
		}
		text := q.text
		if len(text) > 160 {
			text = text[:160] + "…"
		}
		fmt.Fprintf(os.Stderr, "- %q\n  right: %s\n  ranked: %s\n", text, strings.Join(right, ", "), strings.Join(got, ", "))
	}
}
