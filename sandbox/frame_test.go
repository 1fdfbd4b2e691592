package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestFrameReader(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // well past any 64 KiB line limit
	in := `{"t":"ready","python":"3.11.2"}` + "\n\n" +
		`{"t":"out","id":1,"stream":"stdout","data":"` + big + `"}` + "\n" +
		`{"t":"done","id":1,"status":"ok","value":"42","error":null}` + "\n"
	fr := newFrameReader(strings.NewReader(in))
	f, err := fr.next()
	if err != nil || f.T != frameReady || f.Python != "3.11.2" {
		t.Fatalf("ready: %+v %v", f, err)
	}
	f, err = fr.next()
	if err != nil || f.T != frameOut || len(f.Data) != len(big) {
		t.Fatalf("big out frame: %v (len %d)", err, len(f.Data))
	}
	f, err = fr.next()
	if err != nil || f.T != frameDone || f.Value == nil || *f.Value != "42" || f.Error != nil {
		t.Fatalf("done: %+v %v", f, err)
	}
	if _, err := fr.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestFrameReaderRejectsGarbage(t *testing.T) {
	for _, in := range []string{"not json\n", `{"id":1}` + "\n", "[1,2]\n"} {
		if _, err := newFrameReader(strings.NewReader(in)).next(); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestFrameWriterResult(t *testing.T) {
	var buf bytes.Buffer
	fw := newFrameWriter(&buf)
	// A value with newlines (pretty JSON) must still be one line.
	if err := fw.sendResult(7, json.RawMessage("{\n \"a\": \"x\\ny\"\n}"), "", ""); err != nil {
		t.Fatal(err)
	}
	if err := fw.sendResult(8, nil, "BridgeError", "no such server"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	var ok struct {
		T     string
		ID    int64
		OK    bool
		Value map[string]string
	}
	if err := json.Unmarshal([]byte(lines[0]), &ok); err != nil || !ok.OK || ok.ID != 7 || ok.Value["a"] != "x\ny" {
		t.Fatalf("result frame %q: %+v %v", lines[0], ok, err)
	}
	var bad struct {
		OK    bool
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(lines[1]), &bad); err != nil || bad.OK || bad.Error.Message != "no such server" {
		t.Fatalf("error frame %q: %+v %v", lines[1], bad, err)
	}
	if err := fw.sendResult(9, json.RawMessage("{not json\n"), "", ""); err == nil {
		t.Fatal("invalid JSON with a newline was sent")
	}
}
