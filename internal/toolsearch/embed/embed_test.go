package embed

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// readFixture decodes testdata/name, which distill/distill.py wrote from
// the Python tokenizer and the float table before quantisation.
func readFixture(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// tokens returns the ids the model's tokenizer gives text.
func tokens(m *Model, text string) []int {
	out := []int{}
	m.tokenize(text, func(id int) { out = append(out, id) })
	return out
}

// TestTokenizerMatchesPython holds the Go WordPiece tokenizer to the
// ids of the model's own (Hugging Face) tokenizer on sentences with
// punctuation, accents, CJK, camelCase, long and unknown words, control
// characters and odd white space.
func TestTokenizerMatchesPython(t *testing.T) {
	var cases []struct {
		Text string
		IDs  []int
	}
	readFixture(t, "tokenizer.json", &cases)
	if len(cases) == 0 {
		t.Fatal("no cases in testdata/tokenizer.json")
	}
	m := Default()
	for _, c := range cases {
		if got := tokens(m, c.Text); !slices.Equal(got, c.IDs) {
			t.Errorf("tokens of %q:\n got %v\nwant %v", c.Text, got, c.IDs)
		}
	}
}

// TestEmbedMatchesPython holds Embed to the static embedding that
// distill.py computes from the same quantised table (the Go tokenizer and
// arithmetic must not move a vector), and to the one from the float table
// before quantisation (what 4 bits a number lose stays small).
func TestEmbedMatchesPython(t *testing.T) {
	var cases []struct {
		Text          string
		Vector, Float []float32
	}
	readFixture(t, "embeddings.json", &cases)
	if len(cases) == 0 {
		t.Fatal("no cases in testdata/embeddings.json")
	}
	m := Default()
	for _, c := range cases {
		got := m.Embed(c.Text)
		if len(got) != len(c.Vector) || len(got) != len(c.Float) {
			t.Fatalf("%q: %d dimensions, want %d", c.Text, len(got), len(c.Vector))
		}
		if cos := cosine(got, c.Vector); cos < 0.999 {
			t.Errorf("%q: cosine with Python's vector %.4f, want > 0.999", c.Text, cos)
		}
		if cos := cosine(got, c.Float); cos < 0.98 {
			t.Errorf("%q: cosine with the unquantised vector %.4f, want > 0.98", c.Text, cos)
		}
	}
}

// TestSimilarMeaningsAreCloser checks that the vectors rank meanings:
// each query is closer to its paraphrase than to an unrelated text.
func TestSimilarMeaningsAreCloser(t *testing.T) {
	m := Default()
	for _, c := range []struct{ query, near, far string }{
		{"remove a file", "delete file", "list directories"},
		{"what's the weather tomorrow", "get the forecast for a city", "create a git commit"},
		{"send an email to my boss", "compose and send a mail message", "resize an image"},
		{"run a SQL query", "execute a database statement", "translate text to French"},
		{"current time in Tokyo", "get the time in a timezone", "fetch a web page"},
	} {
		q := m.Embed(c.query)
		near, far := cosine(q, m.Embed(c.near)), cosine(q, m.Embed(c.far))
		if near <= far {
			t.Errorf("%q: %q at %.3f is not closer than %q at %.3f", c.query, c.near, near, c.far, far)
		}
	}
}

// TestEmbedIsUnitOrZero checks Embed's contract: a unit vector of Dim
// numbers, all zeros for text with no known token, the same for the same
// text.
func TestEmbedIsUnitOrZero(t *testing.T) {
	m := Default()
	for _, text := range []string{"", "   ", "\x00\x01", "hello"} {
		v := m.Embed(text)
		if len(v) != m.Dim() {
			t.Fatalf("%q: %d dimensions, want %d", text, len(v), m.Dim())
		}
		self := cosine(v, v)
		if strings.TrimSpace(strings.Trim(text, "\x00\x01")) == "" {
			if self != 0 {
				t.Errorf("%q: want the zero vector, got length %v", text, self)
			}
			continue
		}
		if self < 0.999 || !slices.Equal(v, m.Embed(text)) {
			t.Errorf("%q: not a stable unit vector", text)
		}
	}
}

// TestLongInputIsCut checks that a text longer than maxInputBytes is
// embedded from its head and tail: the middle, however long, does not
// count, and the question at its end still does.
func TestLongInputIsCut(t *testing.T) {
	m := Default()
	head := strings.Repeat("pasted log line with words ", maxInputBytes/27)
	question := " how do I delete a file"
	short := m.Embed(head[:maxInputBytes/2] + question)
	long := m.Embed(head + strings.Repeat("ABCD+/", 100_000) + strings.Repeat("é", maxInputBytes) + head + question)
	if cosine(long, m.Embed("delete a file")) <= cosine(m.Embed(head), m.Embed("delete a file")) {
		t.Error("the question at the end of a long text does not move its vector")
	}
	if len(long) != len(short) {
		t.Fatalf("lengths %d and %d", len(long), len(short))
	}
}

// TestCutKeepsCharacters checks that cutting a text never splits a
// UTF-8 character.
func TestCutKeepsCharacters(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	for n := 0; n <= len(s); n++ {
		h, tl := cut(s, n)
		if !strings.HasPrefix(s, h) || !strings.HasSuffix(s, tl) || len(h) > n || len(tl) > n {
			t.Fatalf("cut(%d) = %q, %q", n, h, tl)
		}
		if strings.ContainsRune(h+tl, '\uFFFD') {
			t.Fatalf("cut(%d) split a character: %q, %q", n, h, tl)
		}
	}
}

// TestEmbedConcurrent embeds from many goroutines at once (run with
// -race): the model is read-only.
func TestEmbedConcurrent(t *testing.T) {
	m := Default()
	want := m.Embed("read a file from disk")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if !slices.Equal(m.Embed("read a file from disk"), want) {
					t.Error("a concurrent Embed differs")
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestParseRejectsBrokenTables checks that a truncated or foreign table is
// an error, not a panic or a read out of range.
func TestParseRejectsBrokenTables(t *testing.T) {
	for _, data := range []string{"", "CBEMBED1", table[:len(table)-1], "XXXXXXXX" + table[8:], table + "x"} {
		if _, err := parse(data); err == nil {
			t.Errorf("a table of %d bytes parsed", len(data))
		}
	}
	if _, err := parse(table); err != nil {
		t.Fatal(err)
	}
}

// TestCosine checks cosine on plain cases.
func TestCosine(t *testing.T) {
	for _, c := range []struct {
		a, b []float32
		want float32
	}{
		{[]float32{1, 0}, []float32{2, 0}, 1},
		{[]float32{1, 0}, []float32{0, 3}, 0},
		{[]float32{1, 0}, []float32{-1, 0}, -1},
		{[]float32{0, 0}, []float32{1, 0}, 0},
		{[]float32{1}, []float32{1, 0}, 0},
	} {
		if got := cosine(c.a, c.b); got < c.want-1e-6 || got > c.want+1e-6 {
			t.Errorf("cosine(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// FuzzEmbed checks that no text, however malformed, makes Embed panic or
// give anything but a unit vector or zeros.
func FuzzEmbed(f *testing.F) {
	for _, s := range []string{"", "[UNK]", "[CLS", "##", "\xff\xfe", "é\u0301", "İstanbul", strings.Repeat("a", 200), "a[SEP]b"} {
		f.Add(s)
	}
	m := Default()
	f.Fuzz(func(t *testing.T, s string) {
		v := m.Embed(s)
		if self := cosine(v, v); len(v) != m.Dim() || self != 0 && (self < 0.999 || self > 1.001) {
			t.Fatalf("%q: %d numbers of length %v", s, len(v), self)
		}
	})
}

// BenchmarkEmbed embeds a tool description of about 40 words.
func BenchmarkEmbed(b *testing.B) {
	m := Default()
	text := "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory), and 'children' for directories. Files have no children array, while directories always have a children array."
	b.ReportAllocs()
	for b.Loop() {
		m.Embed(text)
	}
}

// BenchmarkEmbedLong embeds a text far past maxInputBytes.
func BenchmarkEmbedLong(b *testing.B) {
	m := Default()
	text := strings.Repeat("a pasted task of many words, then a question. ", 5000)
	b.ReportAllocs()
	for b.Loop() {
		m.Embed(text)
	}
}
