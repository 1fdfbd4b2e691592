package toon

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const fixtureDir = "../testdata/toon/encode"

type fixtureFile struct {
	Version     string        `json:"version"`
	Category    string        `json:"category"`
	Description string        `json:"description"`
	Tests       []fixtureCase `json:"tests"`
}

type fixtureCase struct {
	Name        string          `json:"name"`
	Input       json.RawMessage `json:"input"`
	Expected    string          `json:"expected"`
	Options     fixtureOptions  `json:"options"`
	ShouldError bool            `json:"shouldError"`
}

type fixtureOptions struct {
	Indent       *int    `json:"indent"`
	Delimiter    *string `json:"delimiter"`
	KeyFolding   *string `json:"keyFolding"`
	FlattenDepth *int    `json:"flattenDepth"`
}

func (o fixtureOptions) opts(t *testing.T) []Option {
	var opts []Option
	if o.Indent != nil {
		opts = append(opts, WithIndent(*o.Indent))
	}
	if o.Delimiter != nil {
		r := []rune(*o.Delimiter)
		if len(r) != 1 {
			t.Fatalf("bad delimiter option %q", *o.Delimiter)
		}
		opts = append(opts, WithDelimiter(r[0]))
	}
	if o.KeyFolding != nil {
		opts = append(opts, WithKeyFolding(*o.KeyFolding))
	}
	if o.FlattenDepth != nil {
		opts = append(opts, WithFlattenDepth(*o.FlattenDepth))
	}
	return opts
}

// TestFixtures runs every official encode fixture through EncodeJSON and,
// via json.RawMessage, through Encode.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures in %s", fixtureDir)
	}
	total := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var ff fixtureFile
		if err := json.Unmarshal(data, &ff); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(ff.Tests) == 0 {
			t.Fatalf("%s: no tests", path)
		}
		t.Run(strings.TrimSuffix(filepath.Base(path), ".json"), func(t *testing.T) {
			for _, tc := range ff.Tests {
				total++
				t.Run(tc.Name, func(t *testing.T) {
					opts := tc.Options.opts(t)
					for _, via := range []struct {
						name string
						fn   func() (string, error)
					}{
						{"EncodeJSON", func() (string, error) { return EncodeJSON(tc.Input, opts...) }},
						{"Encode", func() (string, error) { return Encode(tc.Input, opts...) }},
					} {
						got, err := via.fn()
						if tc.ShouldError {
							if err == nil {
								t.Errorf("%s: want error, got %q", via.name, got)
							}
							continue
						}
						if err != nil {
							t.Errorf("%s: %v", via.name, err)
							continue
						}
						if got != tc.Expected {
							t.Errorf("%s(%s):\ngot:\n%s\nwant:\n%s", via.name, tc.Input, got, tc.Expected)
						}
					}
				})
			}
		})
	}
	t.Logf("ran %d fixture cases from %d files", total, len(files))
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"0e10", "0"},
		{"1.0", "1"},
		{"1.5000", "1.5"},
		{"1e6", "1000000"},
		{"1E+6", "1000000"},
		{"1e-6", "0.000001"},
		{"1.5e-7", "1.5e-7"},
		{"1e-7", "1e-7"},
		{"123e-2", "1.23"},
		{"0.00012300", "0.000123"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"-1.25e21", "-1.25e+21"},
		{"1e400", "1e+400"},
		{"-1e-400", "-1e-400"},
		{"9007199254740993", "9007199254740993"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		{"-123456789012345678901234567890", "-123456789012345678901234567890"},
		{"0.10000000000000000000001", "0.10000000000000000000001"},
		{"3.141592653589793238462643383279", "3.141592653589793238462643383279"},
		{"12.5e1", "125"},
		{"1e99999999999999999999", "null"},
		{"1e-99999999999999999999", "0"},
	} {
		got, err := EncodeJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("EncodeJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestEncodeGoValues(t *testing.T) {
	type inner struct {
		X int `json:"x"`
	}
	type rec struct {
		ID      int       `json:"id"`
		Name    string    `json:"name"`
		Skip    string    `json:"-"`
		Empty   string    `json:"empty,omitempty"`
		Tags    []string  `json:"tags"`
		Inner   inner     `json:"inner"`
		When    time.Time `json:"when"`
		private int
	}
	when := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	negZero := math.Copysign(0, -1)
	big1, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, "null"},
		{"string", "hello world", "hello world"},
		{"int", 42, "42"},
		{"uint64", uint64(math.MaxUint64), "18446744073709551615"},
		{"float", 1.5, "1.5"},
		{"float32", float32(0.1), "0.1"},
		{"float integral", 3.0, "3"},
		{"float big", 1e21, "1e+21"},
		{"float small", 1e-7, "1e-7"},
		{"neg zero", negZero, "0"},
		{"NaN", math.NaN(), "null"},
		{"Inf", math.Inf(-1), "null"},
		{"sorted map", map[string]any{"b": 2, "a": 1, "c": []int{1, 2}}, "a: 1\nb: 2\nc[2]: 1,2"},
		{"int keys", map[int]string{10: "x", 2: "y"}, "\"10\": x\n\"2\": y"},
		{"struct", rec{ID: 1, Name: "Ada", Tags: []string{"a", "b"}, Inner: inner{7}, When: when},
			"id: 1\nname: Ada\ntags[2]: a,b\ninner:\n  x: 7\nwhen: \"2025-01-02T03:04:05Z\""},
		{"struct slice", []inner{{1}, {2}}, "[2]{x}:\n  1\n  2"},
		{"pointer", &inner{5}, "x: 5"},
		{"nil pointer", (*inner)(nil), "null"},
		{"nil slice", []string(nil), "null"},
		{"empty slice", []string{}, "[]"},
		{"bytes", []byte("hi"), "aGk="},
		{"json.Number", json.Number("1.50"), "1.5"},
		{"big.Int", big1, "123456789012345678901234567890"},
		{"raw", json.RawMessage(`{"z":1,"a":2}`), "z: 1\na: 2"},
		{"nested any", map[string]any{"m": map[string]any{"k": []any{1, "x", nil}}}, "m:\n  k[3]: 1,x,null"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
	} {
		got, err := Encode(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	type cyc struct{ Next *cyc }
	c := &cyc{}
	c.Next = c
	for name, v := range map[string]any{
		"chan":       make(chan int),
		"func":       func() {},
		"complex":    complex(1, 2),
		"map of fn":  map[string]any{"f": func() {}},
		"cycle":      c,
		"struct NaN": struct{ F float64 }{math.NaN()},
	} {
		if got, err := Encode(v); err == nil {
			t.Errorf("%s: want error, got %q", name, got)
		}
	}
	for _, in := range []string{"", "{", `{"a":}`, "[1,]", "1 2", "nul", `{"a":1}x`} {
		if got, err := EncodeJSON([]byte(in)); err == nil {
			t.Errorf("EncodeJSON(%q): want error, got %q", in, got)
		}
	}
	for name, opt := range map[string]Option{
		"indent":  WithIndent(0),
		"delim":   WithDelimiter(';'),
		"folding": WithKeyFolding("aggressive"),
		"flatten": WithFlattenDepth(-1),
	} {
		if _, err := EncodeJSON([]byte(`{}`), opt); err == nil {
			t.Errorf("option %s: want error", name)
		}
	}
}

func TestEncodeJSONDetails(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		opts           []Option
	}{
		{"duplicate keys", `{"a":1,"b":2,"a":3}`, "a: 3\nb: 2", nil},
		{"many duplicate keys", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k1":"x"}`,
			"k0: 0\nk1: x\nk2: 2\nk3: 3\nk4: 4\nk5: 5\nk6: 6\nk7: 7\nk8: 8\nk9: 9\nk10: 10\nk11: 11\nk12: 12\nk13: 13\nk14: 14\nk15: 15\nk16: 16", nil},
		{"tabular differing order", `[{"a":1,"b":"x"},{"b":"y","a":2}]`, "[2]{a,b}:\n  1,x\n  2,y", nil},
		{"not tabular: key sets differ", `[{"a":1,"b":2},{"a":1,"c":2}]`, "[2]:\n  - a: 1\n    b: 2\n  - a: 1\n    c: 2", nil},
		{"whitespace quoting", `["\u00a0x", "x\u3000", "a b"]`, "[3]: \"\u00a0x\",\"x\u3000\",a b", nil},
		{"plus numeric", `["+5", "5+", "1.", ".5"]`, `[4]: "+5",5+,1.,.5`, nil},
		{"control escapes", `"a\u0001\u001fb"`, `"a\u0001\u001fb"`, nil},
		{"nested list in list", `[[[1],[{"a":1}]]]`, "[1]:\n  - [2]:\n    - [1]: 1\n    - [1]:\n      - a: 1", nil},
		{"tabular in list item not first", `[{"x":1,"t":[{"a":1},{"a":2}]}]`, "[1]:\n  - x: 1\n    t[2]{a}:\n      1\n      2", nil},
		{"list item object first nested", `[{"o":{"p":1},"q":2}]`, "[1]:\n  - o:\n      p: 1\n    q: 2", nil},
		{"indent 4 list item", `{"items":[{"users":[{"id":1}],"note":"x"}]}`, "items[1]:\n    - users[1]{id}:\n            1\n        note: x", []Option{WithIndent(4)}},
		{"folding in list item", `[{"a":{"b":1},"c":2}]`, "[1]:\n  - a.b: 1\n    c: 2", []Option{WithKeyFolding("safe")}},
		{"folding list item ignores root dotted keys", `{"a.b":0,"l":[{"a":{"b":1}}]}`, "a.b: 0\nl[1]:\n  - a.b: 1", []Option{WithKeyFolding("safe")}},
		{"folding nested collision with root", `{"a":{"x":1,"b":{"c":2}},"a.b.c":3}`, "a:\n  x: 1\n  b:\n    c: 2\na.b.c: 3", []Option{WithKeyFolding("safe")}},
		{"folding tail object", `{"a":{"b":{"x":1,"y":2}}}`, "a.b:\n  x: 1\n  y: 2", []Option{WithKeyFolding("safe")}},
		{"folding depth 3", `{"a":{"b":{"c":{"d":{"e":1}}}}}`, "a.b.c:\n  d:\n    e: 1", []Option{WithKeyFolding("safe"), WithFlattenDepth(3)}},
		{"pipe object value", `{"a":"x|y","b":["x|y"]}`, "a: \"x|y\"\nb[1|]: \"x|y\"", []Option{WithDelimiter('|')}},
		{"tab empty", `{"a":[],"b":[[]]}`, "a: []\nb[1\t]:\n  - [0\t]:", []Option{WithDelimiter('\t')}},
	} {
		got, err := EncodeJSON([]byte(tc.in), tc.opts...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func ExampleEncodeJSON() {
	out, err := EncodeJSON([]byte(`{
		"users": [
			{"id": 1, "name": "Ada", "active": true},
			{"id": 2, "name": "Bob Smith", "active": false}
		],
		"tags": ["admin", "ops"],
		"meta": {"total": 2, "next": null}
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// users[2]{id,name,active}:
	//   1,Ada,true
	//   2,Bob Smith,false
	// tags[2]: admin,ops
	// meta:
	//   total: 2
	//   next: null
}

func ExampleEncode() {
	type item struct {
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	}
	out, err := Encode([]item{{"A1", 2, 9.99}, {"B2", 1, 14.5}}, WithDelimiter('|'))
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// [2|]{sku|qty|price}:
	//   A1|2|9.99
	//   B2|1|14.5
}

type benchRecord struct {
	ID     int     `json:"id"`
	Name   string  `json:"name"`
	Email  string  `json:"email"`
	Active bool    `json:"active"`
	Score  float64 `json:"score"`
}

func benchRecords() []benchRecord {
	recs := make([]benchRecord, 1000)
	for i := range recs {
		recs[i] = benchRecord{
			ID:     i,
			Name:   fmt.Sprintf("user %d", i),
			Email:  fmt.Sprintf("user%d@example.com", i),
			Active: i%3 != 0,
			Score:  float64(i%1000) * 0.137,
		}
	}
	return recs
}

// TestSizeComparison logs TOON vs JSON sizes for the benchmark data set
// (run with -v to see them).
func TestSizeComparison(t *testing.T) {
	recs := benchRecords()
	compact, _ := json.Marshal(recs)
	indented, _ := json.MarshalIndent(recs, "", "  ")
	out, err := EncodeJSON(compact)
	if err != nil {
		t.Fatal(err)
	}
	out2, err := Encode(recs)
	if err != nil {
		t.Fatal(err)
	}
	if out != out2 {
		t.Fatal("Encode and EncodeJSON disagree")
	}
	t.Logf("1000 records: TOON %d bytes, compact JSON %d bytes (TOON %.1f%%), indented JSON %d bytes (TOON %.1f%%)",
		len(out), len(compact), 100*float64(len(out))/float64(len(compact)),
		len(indented), 100*float64(len(out))/float64(len(indented)))
}

func BenchmarkEncodeJSON1000(b *testing.B) {
	data, _ := json.Marshal(benchRecords())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode1000(b *testing.B) {
	recs := benchRecords()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(recs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONMarshal1000(b *testing.B) {
	recs := benchRecords()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(recs); err != nil {
			b.Fatal(err)
		}
	}
}
