package shapes

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/gate"
)

// observe merges the results (CallToolResult JSON) as one tool's shape.
func observe(t *testing.T, mask Mask, results ...string) *Node {
	t.Helper()
	var n *Node
	for _, r := range results {
		if isError(r) { // its caller's to decide (the gate's)
			continue
		}
		o, ok := Observe(json.RawMessage(r), mask)
		if !ok {
			t.Fatalf("Observe(%s) refused it", r)
		}
		n = Merge(n, o)
	}
	return n
}

// isError is whether a result has isError set, as the gate decides it.
func isError(r string) bool {
	var res struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal([]byte(r), &res) == nil && res.IsError
}

func structured(v string) string { return `{"content":[],"structuredContent":` + v + `}` }

func textResult(s string) string {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return string(b)
}

func TestRenderAndMerge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []string
		want    string
	}{
		{"structured", []string{structured(`{"id":1,"title":"x","tags":["a"],"owner":{"login":"o"}}`)},
			`{id: int, owner: {login: str}, tags: [str], title: str}`},
		{"optional and unions", []string{
			structured(`{"id":1,"owner":{"login":"o"},"n":null}`),
			structured(`{"id":2,"n":3.5}`)},
			`{id: int, n: float|None, owner?: {login: str}}`},
		{"list items merged", []string{structured(`[{"a":1},{"a":2,"b":true},{"a":null}]`)},
			`[{a: int|None, b?: bool}]`},
		{"empty list", []string{structured(`{"items":[]}`)}, `{items: []}`},
		{"JSON text", []string{textResult(`{"x": [1, 2.5]}`)}, `str(JSON {x: [int|float]})`},
		{"JSON scalar text", []string{textResult(`42`)}, `str(JSON int)`},
		{"lines", []string{textResult("[FILE] a\n[DIR] b\n")}, `str(lines)`},
		{"CSV-like", []string{textResult("name,email,age\nalice,a@x.org,3\nbob,b@y.org,4\n")}, `str(CSV-like, 3 columns)`},
		{"text and empty merged", []string{textResult("Echo: hello"), textResult("  ")}, `str(text | empty)`},
		{"blocks", []string{`{"content":[{"type":"text","text":"a picture"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"resource","resource":{"uri":"x:/1","mimeType":"text/plain","text":"t"}}]}`},
			`[str(text)|Image(image/png)|resource(text/plain)]`},
		{"hostile content type", []string{`{"content":[{"type":"image","data":"","mimeType":"image/png\u001b[31m"},{"type":"audio","data":"","mimeType":"audio/wav"}]}`},
			`[Audio(audio/wav)|Image(?)]`},
		{"errors are not merged", []string{textResult("ok"), `{"content":[{"type":"text","text":"{\"error\":1}"}],"isError":true}`}, `str(text)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := observe(t, nil, tc.results...).Render(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestNoValuesInShape(t *testing.T) {
	n := observe(t, nil, structured(`{"name":"Sesame-Street-42","secret":"hunter2","count":31337}`),
		textResult("alice,alice@example.org\nbob,bob@example.org\n"))
	data, _ := json.Marshal(n)
	for _, value := range []string{"Sesame", "hunter2", "31337", "alice", "example.org"} {
		if strings.Contains(n.Render(), value) || strings.Contains(string(data), value) {
			t.Errorf("the value %q is in the shape: %s / %s", value, n.Render(), data)
		}
	}
}

func TestBoundsOfHostileResults(t *testing.T) {
	t.Run("10^5 keys", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("{")
		for i := range 100000 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%06d":{"v":%d}`, i, i)
		}
		b.WriteString("}")
		n := observe(t, nil, structured(b.String()))
		if len(n.Fields) != MaxKeys || !n.Cut || n.size() > MaxNodes {
			t.Fatalf("%d keys, cut %v, %d nodes", len(n.Fields), n.Cut, n.size())
		}
		if r := n.Render(); !strings.HasSuffix(r, ", ...}") || len(r) > MaxText {
			t.Fatalf("rendering %d bytes: %.200s", len(r), r)
		}
	})
	t.Run("200 deep", func(t *testing.T) {
		deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
		got := observe(t, nil, structured(deep)).Render()
		want := strings.Repeat("{a: ", MaxDepth) + "{...}" + strings.Repeat("}", MaxDepth)
		if got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		got = observe(t, nil, textResult(strings.Repeat("[", 200)+strings.Repeat("]", 200))).Render()
		if want := "str(JSON " + strings.Repeat("[", MaxDepth) + "[...]" + strings.Repeat("]", MaxDepth) + ")"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
	t.Run("lists of lists", func(t *testing.T) {
		// 16^5 items if every level were read: the work stops at maxWork.
		v := "1"
		for range 5 {
			v = "[" + strings.TrimSuffix(strings.Repeat(v+",", 16), ",") + "]"
		}
		n := observe(t, nil, structured(v))
		if n.size() > MaxNodes {
			t.Fatalf("%d nodes", n.size())
		}
	})
}

func TestKeysEscapedAndCut(t *testing.T) {
	t.Run("control characters and long keys", func(t *testing.T) {
		key := "\x1b[31mred\x1b[0m\nnext: {x}"
		long := strings.Repeat("é", 100)
		b, _ := json.Marshal(map[string]any{key: 1, long: 2, "plain_name": 3})
		got := observe(t, nil, structured(string(b))).Render()
		if strings.ContainsAny(got, "\x1b\n") {
			t.Fatalf("raw control characters in %q", got)
		}
		if !strings.Contains(got, `"\x1b[31mred\x1b[0m\nnext: {x}": int`) || !strings.Contains(got, "plain_name: int") {
			t.Fatalf("keys not quoted as expected: %s", got)
		}
		if !strings.Contains(got, strings.Repeat("é", MaxKeyLen/2)+"…") || strings.Contains(got, strings.Repeat("é", MaxKeyLen/2+1)) {
			t.Fatalf("the long key is not cut at %d bytes: %s", MaxKeyLen, got)
		}
	})
}

func TestMergedGrowthBounded(t *testing.T) {
	t.Run("merged growth stays bounded", func(t *testing.T) {
		var n *Node
		for i := range 200 {
			o, _ := Observe(json.RawMessage(structured(fmt.Sprintf(`{"a%d":{"b":{"c":[1]}}}`, i))), nil)
			n = Merge(n, o)
		}
		if n.size() > MaxNodes || len(n.Fields) > MaxKeys || !n.Cut {
			t.Fatalf("%d nodes, %d keys, cut %v", n.size(), len(n.Fields), n.Cut)
		}
		if len(n.Line()) > MaxLine {
			t.Fatalf("line of %d bytes", len(n.Line()))
		}
	})
}

// TestKeysMaskedByTheGate: a result as the gate passes it on (redacted)
// keeps the kind of what was hidden in a key, not its token.
func TestKeysMaskedByTheGate(t *testing.T) {
	r, err := gate.NewRedactor([]string{"email"}, nil, []gate.Secret{{Name: "api.TOKEN", Value: "s3cr3t-v4lue-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	s := gate.New(gate.Config{Redactor: r}).NewSession()
	raw := s.RedactJSON(json.RawMessage(structured(`{"alice@example.org":{"id":1},"bob@example.org":{"id":2,"x":true},"key_s3cr3t-v4lue-0123456789":1}`)))
	got := observe(t, gate.Masked, string(raw)).Render()
	if want := `{<email>: {id: int, x?: bool}, "key_<secret>": int}`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// BenchmarkObserve is what recording a small JSON text result costs (no
// file written: the shape holds still): queued by the caller, read and
// merged by the store's writer, which runs meanwhile; once results wait
// past its budget, the caller merges its own. Its ns/op is the two
// together, on however many cores there are.
func BenchmarkObserve(b *testing.B) {
	book := Open("", nil).Book("")
	tl := tool("list", "")
	raw := json.RawMessage(textResult(`[{"id":1,"title":"a","tags":["x"],"owner":{"login":"o"}},{"id":2,"title":"b","tags":[],"owner":null}]`))
	for b.Loop() {
		book.Observe("srv", tl, raw, false, gate.Masked)
	}
}

// TestMergeSaysWhenTheRenderingMoved: the store writes a shape only when
// a merge says it changed; that must be exactly when its rendering did.
func TestMergeSaysWhenTheRenderingMoved(t *testing.T) {
	results := []string{
		structured(`{"a":1,"b":{"c":true}}`),
		structured(`{"a":2,"b":{"c":false}}`), // the same shape
		structured(`{"a":2}`),                 // b becomes optional
		structured(`{"a":null,"b":{"c":true}}`),
		structured(`{"a":3,"b":{"c":true}}`),
		structured(`[{"x":1},{"x":2}]`),
		structured(`[{"x":1},{}]`), // x becomes optional among items
		textResult("a\nb\n"),
		textResult("c\nd\n"),
		textResult(`{"k":1}`),
		`{"content":[{"type":"image","data":"","mimeType":"image/png"}]}`,
		`{"content":[{"type":"image","data":"","mimeType":"image/png"}]}`,
	}
	var n *Node
	for i, r := range results {
		o, _ := Observe(json.RawMessage(r), nil)
		before := n.Render()
		var changed bool
		n, changed = mergeChanged(n, o)
		if moved := n.Render() != before; moved != changed {
			t.Errorf("result %d: merge said changed=%v, the rendering moved=%v (%s -> %s)", i, changed, moved, before, n.Render())
		}
	}
}
