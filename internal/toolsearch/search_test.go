package toolsearch

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
)

// index builds the index of docs with the default options and emb.
func index(emb Embedder, docs ...Doc) *Index {
	o := Defaults()
	o.Embedder = emb
	s := New(o)
	as := make([]*Analysed, len(docs))
	for i, d := range docs {
		as[i] = s.Analyse(d)
	}
	return s.Index(as)
}

// names returns the names of a result's hits.
func names(x *Index, r Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, x.Doc(h.Doc).Doc.Name)
	}
	return out
}

// first fails t unless want is the best hit of query.
func first(t *testing.T, x *Index, query, want string) {
	t.Helper()
	got := names(x, x.Search(query, 5))
	if len(got) == 0 || got[0] != want {
		t.Fatalf("%q: got %v, want %s first", query, got, want)
	}
}

func tool(name, description string) Doc {
	return Doc{Server: "srv", Name: name, Description: description}
}

// TestRareWordWins: of two tools that each match one query word, the one
// whose word is rare in the catalogue comes first.
func TestRareWordWins(t *testing.T) {
	x := index(nil,
		tool("list_items", "List the items of the store."),
		tool("lookup", "Run a whois lookup for a domain."),
		tool("list_orders", "List the orders of the store."),
		tool("list_users", "List the users of the store."),
		tool("list_rooms", "List the rooms of the store."),
	)
	first(t, x, "list whois", "lookup")
	first(t, x, "whois list", "lookup")
}

// TestStopWordsDoNotCount: a tool that shares only stop words with the
// query is not a hit, and a query of stop words alone finds nothing.
func TestStopWordsDoNotCount(t *testing.T) {
	x := index(nil,
		tool("read_file", "Read a file."),
		tool("chatter", "It is what it is, and that is all there is to it, for the one who has it."),
	)
	if got := names(x, x.Search("what is the file", 5)); len(got) != 1 || got[0] != "read_file" {
		t.Fatalf("got %v, want only read_file", got)
	}
	if r := x.Search("what is it to you", 5); len(r.Hits) != 0 {
		t.Fatalf("a query of stop words found %v", names(x, r))
	}
}

// TestLongDescriptionDoesNotWin: a tool whose description is long and
// mentions the query's words in passing does not beat the tool that is
// about them.
func TestLongDescriptionDoesNotWin(t *testing.T) {
	long := "A general-purpose thinking tool for problems of every kind. " +
		strings.Repeat("Use it to plan, revise, branch, reflect and verify each step of a solution. ", 30) +
		"It can help with a calendar event, a file, a search, a database query, an email, and more."
	x := index(nil,
		tool("sequentialthinking", long),
		tool("create_event", "Create a calendar event."),
		tool("send_email", "Send an email."),
		tool("checksum", "Verify that a file is whole by its checksum."),
	)
	first(t, x, "calendar event", "create_event")
	first(t, x, "send an email", "send_email")
	first(t, x, "verify each file", "checksum")
}

// TestStemming: "deleting" finds delete, "entities" finds entity.
func TestStemming(t *testing.T) {
	x := index(nil,
		tool("delete_entity", "Delete an entity from the graph."),
		tool("create_entity", "Create an entity in the graph."),
		tool("read_graph", "Read the whole graph."),
	)
	first(t, x, "deleting", "delete_entity")
	first(t, x, "deleted entities", "delete_entity")
}

// TestParamsIndexed: a word only in a parameter's name or description, or
// its enum values, finds the tool.
func TestParamsIndexed(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"timezone": map[string]any{"type": "string", "description": "An IANA zone name."},
		"format":   map[string]any{"type": "string", "enum": []any{"iso8601", "rfc2822"}},
		"options": map[string]any{"type": "object", "properties": map[string]any{
			"leap": map[string]any{"type": "boolean", "description": "Whether to count leap seconds."},
		}},
	}}
	withParams := tool("now", "The current time.")
	withParams.Params = Params(schema)
	x := index(nil, withParams, tool("convert", "Convert a value."), tool("later", "Schedule a time."))
	first(t, x, "timezone", "now")
	first(t, x, "IANA zone", "now")
	first(t, x, "rfc2822", "now")
	first(t, x, "leap seconds", "now")
}

// TestTypo: a word that matches nothing still finds its tool by a typo,
// as a prefix or by starting with a word's stem, or as a subsequence of a
// name, but never in place of an exact match: "next" is not "text"
// when "next" is a word of the catalogue.
func TestTypo(t *testing.T) {
	x := index(nil,
		tool("list_calendars", "List the calendars the user can access."),
		tool("read_text", "Read a text."),
		tool("next_page", "Get the next page of results."),
		tool("search_repositories", "Search for repositories."),
		tool("get_sum", "Add up numbers."),
		tool("create_relations", "Create relations between entities."),
	)
	first(t, x, "calender", "list_calendars")
	first(t, x, "repo", "search_repositories")
	first(t, x, "getsum", "get_sum")
	first(t, x, "relationship", "create_relations")
	if got := names(x, x.Search("next", 5)); len(got) != 1 || got[0] != "next_page" {
		t.Fatalf("next: got %v, want only next_page", got)
	}
	if r := x.Search("zebra", 5); len(r.Hits) != 0 {
		t.Fatalf("zebra found %v", names(x, r))
	}
}

// TestQueryWordsCountOnce: repeating a word does not make it weigh more
// than another.
func TestQueryWordsCountOnce(t *testing.T) {
	x := index(nil,
		tool("upload", "Upload a blob."),
		tool("move_blob", "Move a blob to an archive."),
		tool("archive", "Archive a table."),
	)
	first(t, x, "archive blob", "move_blob")
	first(t, x, "archive archive archive archive blob", "move_blob")
}

// TestLongQueryCut: a query over the budget is cut, the result says so,
// and the question at its end is still found.
func TestLongQueryCut(t *testing.T) {
	x := index(nil, tool("create_event", "Create a calendar event."), tool("send_email", "Send an email."))
	pasted := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 2000) +
		strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 3000) + "\nplease create a calendar event"
	r := x.Search(pasted, 5)
	if !r.Cut.Cut() || r.Cut.Bytes != len(pasted) || r.Cut.Head == 0 || r.Cut.Tail == 0 {
		t.Fatalf("cut: %+v", r.Cut)
	}
	if !strings.Contains(r.Cut.String(), "only its first") {
		t.Fatalf("the cut is not said: %q", r.Cut.String())
	}
	if got := names(x, r); len(got) == 0 || got[0] != "create_event" {
		t.Fatalf("got %v", got)
	}
	if r := x.Search("please create a calendar event", 5); r.Cut.Cut() || r.Cut.String() != "" {
		t.Fatalf("a short query was cut: %+v", r.Cut)
	}
}

// TestBound: the words a query is searched by, whole or cut.
func TestBound(t *testing.T) {
	o := Defaults()
	o.QueryWords = 4
	s := New(o)
	if q := s.bound("readFile then write"); fmt.Sprint(q.words) != "[read file then write]" || q.cut.Cut() {
		t.Fatalf("within the budget: %+v", q)
	}
	q := s.bound("one two three four five six seven")
	if fmt.Sprint(q.words) != "[one two six seven]" || q.cut != (Cut{Bytes: 33, Head: 2, Tail: 2}) {
		t.Fatalf("over the budget: %+v", q)
	}
	if q.text != "one two … six seven" {
		t.Fatalf("the text given the embedder: %q", q.text)
	}
	// Whatever its length, a query is read only at its ends.
	huge := "alpha beta " + strings.Repeat("x", 10<<20) + " gamma delta"
	if q := s.bound(huge); fmt.Sprint(q.words) != "[alpha beta gamma delta]" || !q.cut.Cut() || len(q.text) > 2*queryWindow {
		t.Fatalf("huge: words %v, cut %+v, text of %d bytes", q.words, q.cut, len(q.text))
	}
}

func TestWords(t *testing.T) {
	cases := map[string]string{
		"readFile":            "[read file]",
		"read_multiple-files": "[read multiple files]",
		"HTTPServer v2":       "[httpserver v2]",
		"café.menu":           "[café menu]",
		"a b c dd":            "[dd]",
		"ok " + strings.Repeat("z", maxWordLen+1) + " fine": "[ok fine]",
	}
	for in, want := range cases {
		if got := fmt.Sprint(words(in)); got != want {
			t.Errorf("words(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestTypoDistance(t *testing.T) {
	cases := []struct {
		a, b string
		d    int
	}{
		{"calender", "calendar", 1},
		{"fielsystem", "filesystem", 1},
		{"same", "same", 0},
		{"ab", "ba", 1},
	}
	for _, c := range cases {
		if got := typoDistance(c.a, c.b, 2); got != c.d {
			t.Errorf("typoDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if got := typoDistance("abc", "xyzabc", 2); got <= 2 {
		t.Errorf("typoDistance(abc, xyzabc) = %d, want more than the limit 2", got)
	}
}

func TestParams(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"b":{"description":"B."},"a":{"type":"array","items":{"type":"object","properties":{"c":{"enum":["x","y",3]}}}}}}`)
	got := fmt.Sprint(Params(schema))
	if want := "[{a  []} {a.c  [x y]} {b B. []}]"; got != want {
		t.Fatalf("Params = %s, want %s", got, want)
	}
	if Params(nil) != nil || Params("not a schema") != nil {
		t.Fatal("params of no schema")
	}
}

// TestIndexCached: the same docs give the same index; other docs another.
func TestIndexCached(t *testing.T) {
	s := New(Defaults())
	a, b := s.Analyse(tool("a_tool", "A.")), s.Analyse(tool("b_tool", "B."))
	x := s.Index([]*Analysed{a, b})
	if s.Index([]*Analysed{a, b}) != x {
		t.Fatal("the same docs were indexed again")
	}
	if y := s.Index([]*Analysed{b, a}); y == x || y.Doc(0) != b {
		t.Fatal("other docs got the same index")
	}
}

// fakeEmbedder maps each text to a vector by the concepts its words
// name (other words each fall into one of a few more dimensions), and
// counts what it embeds.
type fakeEmbedder struct {
	mu       sync.Mutex
	embedded map[string]int
}

// concepts are the fake model's dimensions: words that mean the same.
var concepts = [][]string{
	{"remove", "delete", "erase", "discard"},
	{"picture", "image", "photo"},
	{"money", "payment", "invoice", "pay"},
}

func concept(w string) int {
	for i, c := range concepts {
		for _, s := range c {
			if strings.HasPrefix(w, s) {
				return i
			}
		}
	}
	h := fnv.New32a()
	h.Write([]byte(w))
	return len(concepts) + int(h.Sum32()%64)
}

func (f *fakeEmbedder) Embed(text string) []float32 {
	f.mu.Lock()
	if f.embedded == nil {
		f.embedded = map[string]int{}
	}
	f.embedded[text]++
	f.mu.Unlock()
	v := make([]float32, len(concepts)+64)
	for _, w := range words(text) {
		v[concept(w)]++
	}
	return v
}

// TestSemanticFusion: a tool that shares no word with the query is found
// by the semantic ranking, and one found by both rankings comes first.
func TestSemanticFusion(t *testing.T) {
	emb := &fakeEmbedder{}
	x := index(emb,
		tool("erase_photo", "Erase a photo from the album."),
		tool("remove_user", "Remove a user."),
		tool("send_invoice", "Send an invoice to a customer."),
		tool("list_users", "List the users."),
	)
	first(t, x, "delete a picture", "erase_photo")
	first(t, x, "pay the customer", "send_invoice")
	first(t, x, "delete user", "remove_user")
	if r := x.Search("zebra", 5); len(r.Hits) != 0 {
		t.Fatalf("zebra found %v", names(x, r))
	}
}

// TestVectorsCached: a tool is embedded once, however many catalogues
// it is in.
func TestVectorsCached(t *testing.T) {
	emb := &fakeEmbedder{}
	o := Defaults()
	o.Embedder = emb
	s := New(o)
	a, b := s.Analyse(tool("a_tool", "A.")), s.Analyse(tool("b_tool", "B."))
	again := s.Analyse(tool("a_tool", "A.")) // the same definition, listed anew
	s.Index([]*Analysed{a})
	s.Index([]*Analysed{a, b})
	s.Index([]*Analysed{again, b})
	for text, n := range emb.embedded {
		if n != 1 {
			t.Errorf("%q embedded %d times", text, n)
		}
	}
	if len(emb.embedded) != 2 {
		t.Errorf("embedded %d texts, want 2", len(emb.embedded))
	}
}

// TestNameWeighsMore: a word of a tool's name counts for more than the
// same word in another tool's description.
func TestNameWeighsMore(t *testing.T) {
	x := index(nil,
		tool("archive_the_records_of_the_year", "Moves records away."),
		tool("backup", "Archive records."),
	)
	first(t, x, "archive", "archive_the_records_of_the_year")
}

// TestSoftMatching: of the first hits, the one whose words mean what the
// query's words mean comes first, though it shares no word with the query.
func TestSoftMatching(t *testing.T) {
	x := index(&fakeEmbedder{},
		tool("list_records", "List the records of the account."),
		tool("remove_image", "Remove an image."),
	)
	hits := []Hit{{Doc: 0, Score: 0.5}, {Doc: 1, Score: 0.5}}
	x.soft(words("delete the picture"), hits)
	if hits[0].Doc != 1 || hits[0].Score <= hits[1].Score {
		t.Fatalf("soft matching left %+v", hits)
	}
}
