package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
)

func TestFrameReader(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // well past any 64 KiB line limit
	in := `{"t":"ready","v":2,"python":"3.11.2"}` + "\n\n" +
		`{"t":"out","id":1,"stream":"stdout","data":"` + big + `"}` + "\n" +
		`{"t":"rpc","id":"seven","exec":1,"method":"list_servers"}` + "\n" +
		`{"t":"rpc","id":8,"exec":1,"method":["not a string"]}` + "\n" +
		`{"t":"from-the-future","id":1}` + "\n" +
		`{"t":"done","id":1,"status":"ok","value":"42","error":null}` + "\n"
	fr := newFrameReader(strings.NewReader(in))
	next := func() protocol.Frame {
		t.Helper()
		f, err := fr.next()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f, ok := next().(protocol.Ready); !ok || f.Python != "3.11.2" || f.V != 2 {
		t.Fatalf("ready: %#v", f)
	}
	if f, ok := next().(protocol.Out); !ok || len(f.Data) != len(big) {
		t.Fatalf("big out frame: %T", f)
	}
	if f, ok := next().(malformed); !ok || f.err.T != "rpc" || f.err.ID != 0 {
		t.Fatalf("an rpc with a string id: %#v, want malformed without an id", f)
	}
	if f, ok := next().(malformed); !ok || f.err.ID != 8 {
		t.Fatalf("an rpc with a list for a method: %#v, want malformed with id 8", f)
	}
	if f, ok := next().(protocol.Unknown); !ok || f.T != "from-the-future" {
		t.Fatalf("an unknown type: %#v, want Unknown", f)
	}
	if f, ok := next().(protocol.Done); !ok || f.Value == nil || *f.Value != "42" || f.Error != nil {
		t.Fatalf("done: %#v", f)
	}
	if _, err := fr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestFrameReaderRejectsGarbage(t *testing.T) {
	for _, in := range []string{"not json\n", `{"id":1}` + "\n", "[1,2]\n", `{"t":7}` + "\n"} {
		_, err := newFrameReader(strings.NewReader(in)).next()
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want a ProtocolError", in, err)
		}
	}
}

// stuckWriter blocks every write until it is released, like a container
// whose runtime stopped reading its stdin.
type stuckWriter struct {
	release chan struct{}
	entered chan struct{} // gets a token as each write starts
	mu      sync.Mutex
	buf     bytes.Buffer
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{release: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.entered <- struct{}{}
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *stuckWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestOutboxNeverBlocksTheCaller: with the stream stuck, posting still
// returns; an urgent frame goes before those waiting; answers for a cell
// that ended are dropped, not written.
func TestOutboxNeverBlocksTheCaller(t *testing.T) {
	w := newStuckWriter()
	o := newOutbox(w)
	o.cell.Store(1)
	written := make(chan error, 8)
	note := func(err error) { written <- err }
	o.send(protocol.Out{ID: 1, Data: "first"}, 0, false, note)
	<-w.entered // the writer took it and is stuck
	for range 3 {
		o.send(protocol.Result{ID: 5, OK: true}, 1, false, note)
	}
	o.send(protocol.Interrupt{ID: 1}, 0, true, note)
	o.cell.Store(2) // cell 1 ended: its answers must not be written
	close(w.release)
	var dropped int
	for range 5 {
		if err := <-written; errors.Is(err, errDropped) {
			dropped++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if dropped != 3 {
		t.Fatalf("%d answers dropped, want the 3 of the ended cell", dropped)
	}
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"first"`) || !strings.HasPrefix(lines[1], `{"t":"interrupt"`) {
		t.Fatalf("written:\n%s", w.String())
	}
	o.close()
}

// TestOutboxCloseFreesWaiters: closing drops what waits, and a write that
// waits on a closed outbox returns.
func TestOutboxCloseFreesWaiters(t *testing.T) {
	w := newStuckWriter()
	defer close(w.release)
	o := newOutbox(w)
	o.send(protocol.Out{Data: "stuck"}, 0, false, nil)
	<-w.entered
	res := make(chan error, 1)
	go func() { res <- o.write(context.Background(), []byte("later\n")) }()
	o.close()
	if err := <-res; !errors.Is(err, errDropped) {
		t.Fatalf("a write waiting on a closed outbox: %v, want errDropped", err)
	}
	o.send(protocol.Out{}, 0, false, func(err error) { res <- err })
	if err := <-res; !errors.Is(err, errDropped) {
		t.Fatalf("a send after close: %v, want errDropped", err)
	}
}

func TestResultFrames(t *testing.T) {
	var buf bytes.Buffer
	// A value with newlines (pretty JSON) must still be one line.
	parts, err := protocol.ResultParts(7, json.RawMessage("{\n \"a\": \"x\\ny\"\n}"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		buf.Write(p)
	}
	line, err := protocol.Encode(protocol.Result{ID: 8, Error: &protocol.RPCError{Type: "BridgeError", Message: "no such server"}})
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(line)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	f, err := protocol.Decode([]byte(lines[0]))
	if r, ok := f.(protocol.Result); err != nil || !ok || !r.OK || r.ID != 7 || string(r.Value) != `{"a":"x\ny"}` {
		t.Fatalf("result frame %q: %#v %v", lines[0], f, err)
	}
	f, err = protocol.Decode([]byte(lines[1]))
	if r, ok := f.(protocol.Result); err != nil || !ok || r.OK || r.Error.Message != "no such server" {
		t.Fatalf("error frame %q: %#v %v", lines[1], f, err)
	}
	if _, err := protocol.ResultParts(9, json.RawMessage("{not json\n")); err == nil {
		t.Fatal("invalid JSON with a newline was accepted")
	}
}
