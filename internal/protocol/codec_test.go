package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestEncodePutsTypeFirst(t *testing.T) {
	line, err := Encode(Exec{ID: 1, Code: "print(1)"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"t":"exec","id":1,"code":"print(1)"}` + "\n"; string(line) != want {
		t.Fatalf("got %s want %s", line, want)
	}
	if line, _ := Encode(ListServersFrame{}); string(line) != `{"t":"test"}`+"\n" {
		t.Fatalf("a frame without fields: %s", line)
	}
}

// ListServersFrame is a frame with no fields, for the encoder's edge case.
type ListServersFrame struct{}

func (ListServersFrame) Type() string { return "test" }

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Frame
	}{
		{`{"t":"ready","v":2,"python":"3.11.2"}`, Ready{V: 2, Python: "3.11.2"}},
		{`{"id":3,"t":"interrupt"}`, Interrupt{ID: 3}}, // "t" need not come first
		{`{"t":"done","id":1,"status":"ok","value":"42","error":null,"extra":true}`, Done{ID: 1, Status: "ok", Value: ptr("42")}},
		{`{"t":"from-the-future","x":1}`, Unknown{T: "from-the-future"}},
		{`{"t":"resume","key":"k"}`, Resume{Key: "k"}},
		{`{"t":"resumed","v":2,"python":"3.11.2","last":4,"lost":1,"cell":{"id":4,"running":true,"stdout":"a","stderr":"","dropped":0,"done":null}}`,
			Resumed{V: 2, Python: "3.11.2", Last: 4, Lost: 1, Cell: &ResumedCell{ID: 4, Running: true, Stdout: "a"}}},
		{`{"t":"resumed","v":2,"python":"3.11.2","last":0,"lost":0,"cell":null}`, Resumed{V: 2, Python: "3.11.2"}},
		{`{"t":"moved"}`, Moved{}},
	} {
		got, err := Decode([]byte(tc.line))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, %v; want %#v", tc.line, got, err, tc.want)
		}
	}
	var nf *notAFrameError
	for _, line := range []string{"not json", "[1]", `{"id":1}`, `{"t":""}`, `{"t":7}`} {
		if _, err := Decode([]byte(line)); !errors.As(err, &nf) {
			t.Errorf("%s: %v, want a notAFrameError", line, err)
		}
	}
	var se *ShapeError
	if _, err := Decode([]byte(`{"t":"rpc","id":9,"method":[1]}`)); !errors.As(err, &se) || se.ID != 9 || se.T != "rpc" {
		t.Errorf("a malformed rpc: %v, want a ShapeError with id 9", err)
	}
}

func TestTargets(t *testing.T) {
	var _ Targeted = CallToolParams{}
	if got := (CallToolParams{Server: "s", Tool: "x"}).Target(); got != (Target{Kind: "tool", Server: "s", Name: "x"}) {
		t.Fatalf("call_tool target %+v", got)
	}
}

func ptr(s string) *string { return &s }

// FuzzDecode: no line makes Decode panic, and a frame it decodes encodes
// to a line that decodes to the same frame.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"t":"ready","v":2,"python":"3.11.2"}`,
		`{"t":"rpc","id":1,"exec":1,"method":"call_tool","params":{"server":"s","tool":"t","arguments":{"a":1}}}`,
		`{"t":"done","id":1,"status":"ok","value":null,"error":null,"spill":{"stdout":{"path":"/x","chars":3}}}`,
		`{"t":"out","id":1,"stream":"stdout","data":"\u2028\n"}`,
		`{"t":"put","id":1,"files":[{"path":"a","data":"AAE="}]}`,
		`{"t":"resumed","v":2,"python":"3","last":1,"lost":0,"cell":{"id":1,"running":false,"stdout":"","stderr":"","dropped":0,"done":{"id":1,"status":"ok","value":null,"error":null}}}`,
		`{"t":"rpc","id":"x"}`, `{"t":1}`, `[]`, `{}`, `{"t":"\"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			return
		}
		if _, unknown := fr.(Unknown); unknown {
			return
		}
		again, err := Encode(fr)
		if err != nil {
			t.Fatalf("a decoded %T does not encode: %v", fr, err)
		}
		if bytes.Count(again, []byte("\n")) != 1 {
			t.Fatalf("an encoded frame spans lines: %q", again)
		}
		back, err := Decode(again)
		if err != nil {
			t.Fatalf("%s does not decode again: %v", again, err)
		}
		a, _ := json.Marshal(fr)
		b, _ := json.Marshal(back)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the frame:\n%s\n%s", a, b)
		}
	})
}
