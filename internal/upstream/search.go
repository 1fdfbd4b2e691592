package upstream

import (
	"sync"

	"github.com/codebridge/codebridge/internal/toolsearch"
	"github.com/codebridge/codebridge/internal/toolsearch/embed"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// toolWords is a tool's search form: its words, field by field, as the
// ranking indexes them (toolsearch.Analysed), computed once per listed
// tool.
type toolWords = toolsearch.Analysed

// newToolWords returns the search form of tool t of server.
func newToolWords(server string, t *mcp.Tool) *toolWords {
	return newServerToolWords(server, "", t)
}

// newServerToolWords is newToolWords with the server's own description.
func newServerToolWords(server, description string, t *mcp.Tool) *toolWords {
	return searcher().Analyse(toolsearch.Doc{
		Server:            server,
		ServerDescription: description,
		Name:              t.Name,
		Title:             t.Title,
		Description:       t.Description,
		Params:            toolsearch.Params(t.InputSchema),
	})
}

// wordIndex keeps the search forms of a server's tool list, computed on
// the first search of each list; description is the server's.
type wordIndex struct {
	description string

	mu    sync.Mutex
	words []*toolWords
	first *mcp.Tool // the first tool of the list words was computed for
}

// of returns the search forms of tools, listed by server, one per tool.
func (x *wordIndex) of(server string, tools []*mcp.Tool) []*toolWords {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.words) != len(tools) || (len(tools) > 0 && x.first != tools[0]) {
		x.words, x.first = make([]*toolWords, len(tools)), nil
		if len(tools) > 0 {
			x.first = tools[0]
		}
		for i, t := range tools {
			x.words[i] = newServerToolWords(server, x.description, t)
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

// searcher is the ranking that search uses everywhere (the sandbox's
// search_tools and `codebridge search`), made on the first search: its
// semantic side loads a table of word vectors.
var searcher = sync.OnceValue(func() *toolsearch.Searcher { return toolsearch.New(SearchOptions()) })

// SearchOptions are the options of that ranking (the bench measures them,
// and what each part is worth).
func SearchOptions() toolsearch.Options {
	o := toolsearch.Defaults()
	o.Embedder = embed.Default()
	return o
}

// Rank orders entries by how well they match query and returns the best
// limit of them (all matches when limit <= 0). The ranking is toolsearch's
// (lexical BM25F over names, titles, parameters, descriptions and server
// names, fused with a semantic ranking); the index of a set of entries is
// kept while its tool lists do not change. Entries that match nothing are
// left out.
func Rank(query string, entries []Entry, limit int) []Hit {
	hits, _ := Search(query, entries, limit)
	return hits
}

// Search is Rank that also says, when the query was over the search budget,
// what was searched of it ("" otherwise).
func Search(query string, entries []Entry, limit int) ([]Hit, string) {
	s := searcher()
	r := s.Index(loose.of(entries)).Search(query, limit)
	if len(r.Hits) == 0 {
		return nil, r.Cut.String()
	}
	hits := make([]Hit, len(r.Hits))
	for i, h := range r.Hits {
		hits[i] = Hit{Entry: entries[h.Doc], Score: h.Score}
	}
	return hits, r.Cut.String()
}

// loose keeps the search forms of entries that come without one (the
// bridge's skills), so that the same tool keeps the same form and the
// index of a catalogue that includes it is kept too.
var loose = &looseWords{words: map[looseKey]*toolWords{}}

type looseKey struct {
	server string
	tool   *mcp.Tool
}

type looseWords struct {
	mu    sync.Mutex
	words map[looseKey]*toolWords
}

// maxLoose bounds looseWords; past it, it starts again.
const maxLoose = 4096

// of returns the search forms of entries: their own, or those kept here.
func (l *looseWords) of(entries []Entry) []*toolWords {
	out := make([]*toolWords, len(entries))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range entries {
		if out[i] = e.words; out[i] != nil {
			continue
		}
		k := looseKey{e.Server, e.Tool}
		w, ok := l.words[k]
		if !ok {
			if len(l.words) >= maxLoose {
				clear(l.words)
			}
			w = newToolWords(e.Server, e.Tool)
			l.words[k] = w
		}
		out[i] = w
	}
	return out
}
