package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readAll reads the messages t makes of input until the first error, and
// that error's text.
func readAll(t testing.TB, tr mcp.Transport) ([]jsonrpc.Message, string) {
	c, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var msgs []jsonrpc.Message
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			return msgs, err.Error()
		}
		msgs = append(msgs, m)
	}
}

// sameAsTheSDK checks that StdioTransport reads input as the go-sdk's
// IOTransport does: the same messages, then the same error.
func sameAsTheSDK(t testing.TB, input string) {
	want, wantErr := readAll(t, &mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(input)), Writer: nopWriteCloser{io.Discard}})
	got, gotErr := readAll(t, &StdioTransport{Reader: strings.NewReader(input), Writer: io.Discard})
	if !reflect.DeepEqual(got, want) || gotErr != wantErr {
		t.Fatalf("input %q:\n got %s, %s\nwant %s, %s", input, show(got), gotErr, show(want), wantErr)
	}
}

func show(msgs []jsonrpc.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m := m.(type) {
		case *jsonrpc.Request:
			fmt.Fprintf(&b, "[req id=%#v method=%q params=%q] ", m.ID.Raw(), m.Method, m.Params)
		case *jsonrpc.Response:
			fmt.Fprintf(&b, "[resp id=%#v result=%q err=%v] ", m.ID.Raw(), m.Result, m.Error)
		}
	}
	return b.String()
}

var stdioSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"}}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3},"name":"run_python","arguments":{"code":"print(\"}\\n\")"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}` + "\r\n",
	`{"jsonrpc":"2.0","id":"abc","method":"ping"}` + "\n\n  \n" + `{"jsonrpc":"2.0","id":"x","result":{"roots":[]}}` + "\n",
	`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1e3,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":-0,"method":"ping","params":null}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","id":2}` + "\n",
	`{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}` + "\n",
	`{"JSONRPC":"2.0","id":1,"method":"ping"}` + "\n",
	`{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":5}` + "\n",
	`{"jsonrpc":"2.0","id":1,"result":null}` + "\n",
	`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"error":5}` + "\n",
	`{"jsonrpc":"2.0","result":{}}` + "\n",
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n",
	`[]` + "\n",
	"{\n \"jsonrpc\": \"2.0\",\n \"id\": 1,\n \"method\": \"ping\"\n}\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping"} ` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"pi`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"` + "\xff" + `"}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + "}\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1,"x":2}}` + "\n",
	`nonsense` + "\n",
	"",
	"   \n",
}

// TestStdioTransportReadsAsTheSDK: every seed, and each seed followed by
// a plain request, reads the same through both transports.
func TestStdioTransportReadsAsTheSDK(t *testing.T) {
	for _, s := range stdioSeeds {
		sameAsTheSDK(t, s)
		sameAsTheSDK(t, s+`{"jsonrpc":"2.0","id":99,"method":"ping"}`+"\n")
	}
}

// TestStdioTransportLongLine: a line over fastLineLimit, and what comes
// after it, still read as the go-sdk reads them.
func TestStdioTransportLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"code":"` + strings.Repeat("x", fastLineLimit) + `"}}` + "\n"
	sameAsTheSDK(t, long+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
}

// TestStdioTransportAnswersABatchAsABatch: after a batch (handed over to
// the go-sdk) the answers to its requests go out as one array.
func TestStdioTransportAnswersABatchAsABatch(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":0,"method":"ping"}` + "\n" + `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n"
	var out strings.Builder
	c, err := (&StdioTransport{Reader: strings.NewReader(in), Writer: &out}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		m, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		id := m.(*jsonrpc.Request).ID
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"jsonrpc":"2.0","id":0,"result":{}}` + "\n" + `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]` + "\n"
	if out.String() != want {
		t.Fatalf("wrote %q, want %q", out.String(), want)
	}
}

// TestStdioTransportClose: Close ends a Read that waits for input.
func TestStdioTransportClose(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c, _ := (&StdioTransport{Reader: r, Writer: io.Discard}).Connect(context.Background())
	done := make(chan error)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	_ = c.Close()
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close: %v, want io.EOF", err)
	}
}

// FuzzStdioTransport holds StdioTransport to the go-sdk's IOTransport on
// any input.
func FuzzStdioTransport(f *testing.F) {
	for _, s := range stdioSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) { sameAsTheSDK(t, input) })
}

// TestStdioTransportReadsRequestsItself: a client's usual messages are
// made from their envelope, not handed to the go-sdk's decoder.
func TestStdioTransportReadsRequestsItself(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"}}}`,
		`{"method":"notifications/cancelled","params":{"requestId":7},"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"roots":[]}}`,
	} {
		if _, ok := fastMessage([]byte(line)); !ok {
			t.Errorf("%s: not read from its envelope", line)
		}
	}
}

// TestStdioTransportLongLineEndingInAnObject: a line over fastLineLimit
// whose part read so far happens to end a whole object is the go-sdk's
// to read, as it reads it when one of its reads ends there. (Whether the
// go-sdk then sees the "x" after the object at once, and calls it
// trailing data, depends on where its reads end: on a pipe, on how the
// client's writes fell.)
func TestStdioTransportLongLineEndingInAnObject(t *testing.T) {
	obj := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	read := 17 * 64 << 10 // what nextLine has read when it gives up: 17 full buffers
	input := strings.Repeat(" ", read-len(obj)) + obj + "x\n"
	want, wantErr := readAll(t, &mcp.IOTransport{Reader: io.NopCloser(io.MultiReader(strings.NewReader(input[:read]), strings.NewReader(input[read:]))), Writer: nopWriteCloser{io.Discard}})
	got, gotErr := readAll(t, &StdioTransport{Reader: strings.NewReader(input), Writer: io.Discard})
	if !reflect.DeepEqual(got, want) || gotErr != wantErr {
		t.Fatalf("got %s, %s\nwant %s, %s", show(got), gotErr, show(want), wantErr)
	}
}
