package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callKey is the _meta key under which a connection ties a log message to
// the tool call it came with: the call's progress token. A value the
// server wrote under it is removed.
const callKey = "codebridge/call"

// tagLog returns the JSON-RPC message line with callKey set to call's
// token (call nil: removed), and holds call until the message is handled
// (see [callWatchers.logMessage]). A line that is not a log message the go-sdk
// will decode is returned as it is, or without callKey.
func tagLog(line []byte, call *callWatch) []byte {
	if call == nil && !bytes.Contains(line, []byte(callKey)) {
		return line
	}
	var msg map[string]json.RawMessage
	var params map[string]any
	if json.Unmarshal(line, &msg) != nil || string(msg["method"]) != `"notifications/message"` ||
		json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return line
	}
	if call != nil && json.Unmarshal(msg["params"], new(mcp.LoggingMessageParams)) != nil {
		call = nil // its handler may never run to let the call go
	}
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, callKey)
	if call != nil {
		meta[callKey] = call.token
	}
	params["_meta"] = meta
	raw, err := json.Marshal(params)
	if err != nil {
		return line
	}
	msg["params"] = raw
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	if call != nil {
		call.hold()
	}
	return out
}

// eachMember calls f with the key of each member of the JSON object dec
// reads next, in order; f reads (or skips) the member's value, and stops
// the walk when it reports false.
func eachMember(dec *json.Decoder, f func(key string) (more bool, err error)) error {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return errors.New("not a JSON object")
		}
		if more, err := f(key); err != nil || !more {
			return err
		}
	}
	return nil
}

// skipMember reads past the value of the member dec is at.
func skipMember(dec *json.Decoder) (bool, error) {
	var v json.RawMessage
	return true, dec.Decode(&v)
}

// progressTokenOf is the progress token in the _meta of the request
// params dec reads next, or nil. The go-sdk writes _meta first, so the
// rest of the params (a tool call's arguments, of any size) is not read.
func progressTokenOf(dec *json.Decoder) any {
	var meta struct {
		ProgressToken any `json:"progressToken"`
	}
	_ = eachMember(dec, func(key string) (bool, error) {
		if key != "_meta" {
			return skipMember(dec)
		}
		return false, dec.Decode(&meta)
	})
	return meta.ProgressToken
}

// callOfRequest is the tool call in calls that an HTTP request to a
// remote server is, found by the progress token of the tools/call it
// carries (the go-sdk writes the method before the params), or nil. The
// request is the bridge's own (its body is what the go-sdk wrote for the
// call): nothing a server sends chooses the call.
func callOfRequest(calls *callWatchers, req *http.Request) *callWatch {
	if calls == nil || req.Method != http.MethodPost || req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	var method string
	var token any
	_ = eachMember(dec, func(key string) (bool, error) {
		switch key {
		case "method":
			return true, dec.Decode(&method)
		case "params":
			if method == "tools/call" {
				token = progressTokenOf(dec)
			}
			return false, nil
		}
		return skipMember(dec)
	})
	return calls.callOf(token)
}

// tieStream ties the log messages a remote server sends in the response
// to a request to the tool call in calls that request is: streamable HTTP
// sends the messages related to a request on that request's event stream.
// Any other stream (the standalone one, another request's) ties none.
func tieStream(calls *callWatchers, req *http.Request, resp *http.Response) {
	if resp == nil || resp.Body == nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return
	}
	resp.Body = &sseTagger{src: bufio.NewReaderSize(resp.Body, 64<<10), body: resp.Body, call: callOfRequest(calls, req)}
}

// sseTagger passes an event stream through, line by line, with the log
// messages in its data lines tagged by [tagLog]. A line longer than its
// buffer passes through untouched.
type sseTagger struct {
	src     *bufio.Reader
	body    io.Closer
	call    *callWatch
	out     []byte // the rest of the line being read out
	long    bool   // within a line longer than the buffer
	readErr error
}

func (t *sseTagger) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.readErr != nil {
			return 0, t.readErr
		}
		t.out, t.readErr = t.line()
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// line reads the next line (or the next piece of a long one); the slice is
// valid until the next read, which comes only once it was read out.
func (t *sseTagger) line() ([]byte, error) {
	chunk, err := t.src.ReadSlice('\n')
	long := errors.Is(err, bufio.ErrBufferFull)
	if long {
		err = nil
	}
	if t.long || long {
		t.long = long
		return chunk, err
	}
	data, ok := bytes.CutPrefix(chunk, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`notifications/message`)) {
		return chunk, err
	}
	tagged := tagLog(bytes.TrimSpace(data), t.call)
	return append(append([]byte("data: "), tagged...), '\n'), err
}

func (t *sseTagger) Close() error { return t.body.Close() }
