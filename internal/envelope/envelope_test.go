package envelope

import (
	"encoding/json"
	"testing"
)

func TestOfFindsTheMembers(t *testing.T) {
	cases := []struct{ line, id, method, params, result string }{
		{`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`, `3`, ``, ``, `{"content":[]}`},
		{`{"result": [1, {"a": "}\"]"}], "id" : "x\"}" , "jsonrpc":"2.0"}`, `"x\"}"`, ``, ``, `[1, {"a": "}\"]"}]`},
		{`{"jsonrpc":"2.0","method":"ping","id":-1.5e3}`, `-1.5e3`, `"ping"`, ``, ``},
		{` { "id" : 7 , "result" : null } `, `7`, ``, ``, `null`},
		{`{"id":1,"result":true}`, `1`, ``, ``, `true`},
		{`{"id":1,"method":"tools/call","params":{"name":"x","arguments":{"code":"print(\"}\")"}}}`, `1`, `"tools/call"`, `{"name":"x","arguments":{"code":"print(\"}\")"}}`, ``},
		{`[1,2]`, ``, ``, ``, ``},
	}
	for _, c := range cases {
		f := Of([]byte(c.line))
		if string(f.ID) != c.id || string(f.Method) != c.method || string(f.Params) != c.params || string(f.Result) != c.result || f.Unusual {
			t.Errorf("Of(%s) = id %q method %q params %q result %q unusual %v", c.line, f.ID, f.Method, f.Params, f.Result, f.Unusual)
		}
	}
}

// TestOfMarksWhatAReaderShouldNotTrust: a key written with an escape and
// a member given twice are flagged; an unknown member given twice is not.
func TestOfMarksWhatAReaderShouldNotTrust(t *testing.T) {
	for line, unusual := range map[string]bool{
		`{"id":1,"method":"a","id":2}`:          true,
		`{"\u0069d":1,"method":"a"}`:            true,
		`{"i\"d":1,"method":"a"}`:               true,
		`{"x":1,"x":2,"id":1,"method":"a"}`:     false,
		`{"jsonrpc":"2.0","id":1,"method":"a"}`: false,
	} {
		if got := Of([]byte(line)).Unusual; got != unusual {
			t.Errorf("Of(%s).Unusual = %v, want %v", line, got, unusual)
		}
	}
	if f := Of([]byte(`{"id":1,"id":2}`)); string(f.ID) != "2" {
		t.Errorf("a member given twice: the last should count, got %s", f.ID)
	}
	if f := Of([]byte(`{"\u0069d":5}`)); string(f.ID) != "5" {
		t.Errorf("an escaped key should still be found, got id %q", f.ID)
	}
}

// FuzzOf holds Of to encoding/json: on any valid JSON object it finds the
// same members.
func FuzzOf(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a\"b}"}]}}`,
		`{"id":"x","method":"tools/call","params":{}}`,
		`{"id":1,"result":[],"id":2}`,
		`{"id":1e5,"error":{"code":-1,"message":"]"}}`,
		`{ "result" : "\\" , "id" : null }`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var want map[string]json.RawMessage
		if !json.Valid([]byte(line)) || json.Unmarshal([]byte(line), &want) != nil || want == nil {
			return
		}
		got := Of([]byte(line))
		for key, span := range map[string][]byte{"jsonrpc": got.Version, "id": got.ID, "method": got.Method, "params": got.Params, "result": got.Result, "error": got.Error} {
			w, ok := want[key]
			if !ok {
				if span != nil {
					t.Fatalf("%s: found %s %q, which is not there", line, key, span)
				}
				continue
			}
			if !jsonEqual(w, span) {
				t.Fatalf("%s: %s = %q, encoding/json says %q", line, key, span, w)
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
