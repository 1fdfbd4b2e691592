package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is the transport to a stdio upstream: newline-delimited
// JSON-RPC over its stdout and stdin. Unlike the go-sdk's IOTransport it
// passes tools/call results through without decoding them: the raw bytes
// of the result go to the caller's [rawSlot], and the go-sdk receives a
// small placeholder. A 200 MiB result then costs the bridge its bytes
// once, not a decoded copy and a re-encoded one on top.
type lineTransport struct {
	r          io.ReadCloser
	w          io.WriteCloser
	maxMessage int
	conn       *lineConn // the connection Connect made, for the bridge's own tools/call requests
}

// Connect starts reading the server's output.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		w:        t.w,
		r:        t.r,
		incoming: make(chan lineOrErr),
		closed:   make(chan struct{}),
		pending:  map[string]*rawSlot{},
	}
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10), t.maxMessage)
	t.conn = c
	return c, nil
}

// errReading marks the error that ended a connection's reading: the
// session is over.
var errReading = errors.New("reading from the server")

// placeholderResult is what the go-sdk decodes in place of a tools/call or
// resources/read result whose raw bytes went to a rawSlot (an empty
// CallToolResult and an empty ReadResourceResult at once).
var placeholderResult = json.RawMessage(`{"content":[],"contents":[]}`)

// rawMethods are the requests whose results a rawSlot can take: those that
// carry an upstream's data, of any size.
var rawMethods = map[string]bool{"tools/call": true, "resources/read": true}

// rawSlot receives the raw result of one tools/call request. Server.Call
// puts one in the context of its call; the connection fills it.
type rawSlot struct {
	raw     json.RawMessage
	release func()     // forgets the request when no response came
	call    *callWatch // the tool call the request is (nil for a resource read)

	// For a request the bridge sent itself ([lineConn.call]): closed once
	// raw or err is set; nil for a request of the go-sdk's.
	done chan struct{}
	err  error
}

type rawSlotKey struct{}

// withRawSlot returns a context whose tools/call request, on a stdio
// upstream, leaves its raw result in the returned slot.
func withRawSlot(ctx context.Context) (context.Context, *rawSlot) {
	slot := &rawSlot{release: func() {}}
	return context.WithValue(ctx, rawSlotKey{}, slot), slot
}

type lineOrErr struct {
	msg jsonrpc.Message
	err error
}

// lineConn is one connection of a lineTransport.
type lineConn struct {
	r        io.Closer
	w        io.WriteCloser
	wmu      sync.Mutex
	incoming chan lineOrErr
	closed   chan struct{}
	once     sync.Once

	mu      sync.Mutex
	pending map[string]*rawSlot // JSON id of an unanswered tools/call -> its slot
}

// Read returns the next message from the server.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case v := <-c.incoming:
		return v.msg, v.err
	}
}

// Write sends msg to the server. A tools/call request made with a rawSlot
// in its context is remembered, so that its result goes to the slot.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && rawMethods[req.Method] && req.IsCall() {
		if slot, ok := ctx.Value(rawSlotKey{}).(*rawSlot); ok {
			id, err := json.Marshal(req.ID.Raw())
			if err != nil {
				return err
			}
			c.mu.Lock()
			c.pending[string(id)] = slot
			c.mu.Unlock()
			slot.release = func() {
				c.mu.Lock()
				delete(c.pending, string(id))
				c.mu.Unlock()
			}
		}
	}
	return c.writeLine(append(data, '\n'))
}

// writeLine writes one message, a line, to the server's stdin.
func (c *lineConn) writeLine(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(line)
	return err
}

// Close closes the server's stdin and stdout; a Read in progress returns.
func (c *lineConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = errors.Join(c.w.Close(), c.r.Close())
	})
	return err
}

// SessionID is empty: stdio has no sessions.
func (c *lineConn) SessionID() string { return "" }

// readLoop reads the server's messages, one a line, until an error.
func (c *lineConn) readLoop(r *bufio.Reader, maxMessage int) {
	for {
		line, err := readLine(r, maxMessage)
		var msgs []jsonrpc.Message
		if err == nil {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			msgs, err = c.decode(line)
		}
		for _, m := range msgs {
			if !c.deliver(lineOrErr{msg: m}) {
				return
			}
		}
		if err != nil {
			err = fmt.Errorf("%w: %w", errReading, err)
			c.failOwn(err)
			c.deliver(lineOrErr{err: err})
			return
		}
	}
}

// deliver hands v to Read; it reports false when the connection closed.
func (c *lineConn) deliver(v lineOrErr) bool {
	select {
	case c.incoming <- v:
		return true
	case <-c.closed:
		return false
	}
}

// collectAfter is the size of a message after which readLine collects
// garbage at once.
const collectAfter = 8 << 20

// readLine returns the next line without its newline, in a buffer of its
// own, or an error if it is longer than limit bytes. A long line is
// gathered in blocks and joined once, so that it costs at most twice its
// size while it is read (growing one buffer would leave up to four times
// its size of garbage behind).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var blocks [][]byte
	total := 0
	for {
		chunk, err := r.ReadSlice('\n')
		total += len(chunk)
		if total > limit+1 {
			return nil, fmt.Errorf("the server sent a message over %d MiB, the most a stdio upstream may send", limit>>20)
		}
		switch {
		case err == nil && blocks == nil:
			return bytes.Clone(chunk[:len(chunk)-1]), nil
		case err == nil:
			line := bytes.Join(append(blocks, chunk[:len(chunk)-1]), nil)
			if total >= collectAfter {
				// Free the blocks, and what earlier large messages left,
				// now: the next large message then reuses that memory
				// instead of adding to the bridge's peak. The buffers
				// hold no pointers, so this collection is quick.
				blocks = nil
				runtime.GC()
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			blocks = append(blocks, bytes.Clone(chunk))
			continue
		case errors.Is(err, io.EOF) && total > 0:
			return bytes.Join(append(blocks, chunk), nil), nil // a last message without a newline
		}
		return nil, err
	}
}

// decode turns one line into its messages. The result of a tools/call
// request that has a rawSlot goes to the slot, unparsed, and the message
// carries the placeholder instead.
func (c *lineConn) decode(line []byte) ([]jsonrpc.Message, error) {
	if line[0] == '[' {
		return decodeBatch(line)
	}
	if !json.Valid(line) {
		return nil, errors.New("the server sent a line that is not JSON")
	}
	f := envelope(line)
	if string(f.method) == `"notifications/message"` {
		line = c.tieLog(line)
	}
	if f.method == nil && f.id != nil {
		c.mu.Lock()
		slot := c.pending[string(f.id)]
		own := slot != nil && slot.done != nil
		if own || f.result != nil {
			delete(c.pending, string(f.id))
		}
		c.mu.Unlock()
		if own { // the bridge's own request: nothing for the go-sdk
			slot.settle(f)
			return nil, nil
		}
		if slot != nil && f.result != nil {
			slot.raw = f.result
			if msg, ok := placeholderResponse(f); ok {
				return []jsonrpc.Message{msg}, nil
			}
			line = []byte(`{"jsonrpc":"2.0","id":` + string(f.id) + `,"result":` + string(placeholderResult) + `}`)
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{msg}, nil
}

// ownIDs numbers the bridge's own requests ([lineConn.call]). Their ids
// are strings ("codebridge-N"); the go-sdk numbers its requests with
// integers, so the two never meet.
var ownIDs atomic.Int64

// call sends a tools/call request with params itself, not through the
// go-sdk, and returns the result as the server sent it, undecoded. The
// go-sdk would decode the placeholder of every result twice, each time
// with a 32 KiB buffer, and hand the response through two goroutines;
// here the reading goroutine hands it straight to the caller. Only for a
// session on the legacy protocol (which is what the bridge asks for):
// there a tools/call is one request and one response, with no
// multi-round-trip retries. slot.call is the call's watch (log messages
// that come while it is the only request in flight are tied to it). The
// errors are the go-sdk's: a JSON-RPC error as a *jsonrpc.Error, the
// connection's end as mcp.ErrConnectionClosed or errReading, and ctx's
// end as ctx.Err(), after which the server is told the request is
// cancelled.
func (c *lineConn) call(ctx context.Context, params *mcp.CallToolParams, slot *rawSlot) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id := `"codebridge-` + strconv.FormatInt(ownIDs.Add(1), 10) + `"`
	slot.done = make(chan struct{})
	c.mu.Lock()
	c.pending[id] = slot
	c.mu.Unlock()
	if err := c.writeLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + string(p) + "}\n")); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	select {
	case <-slot.done:
		return slot.raw, slot.err
	case <-ctx.Done():
		if !c.forget(id) { // answered meanwhile
			<-slot.done
			return slot.raw, slot.err
		}
		go c.cancelled(id, ctx.Err())
		return nil, ctx.Err()
	case <-c.closed:
		if !c.forget(id) {
			<-slot.done
			return slot.raw, slot.err
		}
		return nil, fmt.Errorf("%w: calling %q: the connection is closed", mcp.ErrConnectionClosed, "tools/call")
	}
}

// forget removes the bridge's own request id from those waiting; false
// when it was no longer there (its answer, or the connection's end, took
// it and settles its slot).
func (c *lineConn) forget(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// cancelled tells the server that the bridge's own request id was
// cancelled, as the go-sdk does for its own: best effort, and within a
// bound, since a server that does not read would hold the write.
func (c *lineConn) cancelled(id string, why error) {
	reason, _ := json.Marshal(why.Error())
	line := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":` + string(reason) + "}}\n")
	done := make(chan struct{})
	go func() {
		_ = c.writeLine(line)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cancelNoticeTime):
	case <-c.closed:
	}
}

// cancelNoticeTime bounds the wait to tell a server a request was
// cancelled.
const cancelNoticeTime = 5 * time.Second

// failOwn ends the bridge's own requests still waiting with err: the
// server's output ended.
func (c *lineConn) failOwn(err error) {
	c.mu.Lock()
	var own []*rawSlot
	for id, slot := range c.pending {
		if slot.done != nil {
			own = append(own, slot)
			delete(c.pending, id)
		}
	}
	c.mu.Unlock()
	for _, slot := range own {
		slot.err = err
		close(slot.done)
	}
}

// settle gives the bridge's own request its response: the result as it
// came, or the JSON-RPC error (wrapped as the go-sdk wraps it).
func (slot *rawSlot) settle(f fields) {
	defer close(slot.done)
	if f.err != nil && string(f.err) != "null" {
		var werr jsonrpc.Error
		if err := json.Unmarshal(f.err, &werr); err != nil {
			slot.err = fmt.Errorf("calling %q: the server's error response cannot be read: %w", "tools/call", err)
			return
		}
		slot.err = fmt.Errorf("calling %q: %w", "tools/call", &werr)
		return
	}
	if f.result == nil {
		slot.err = fmt.Errorf("calling %q: the server's response has neither a result nor an error", "tools/call")
		return
	}
	slot.raw = f.result
}

// placeholderResponse is the go-sdk's message for a response whose result
// went to a rawSlot, made without decoding the placeholder line: the
// go-sdk's decoder allocates a 32 KiB buffer for every message, however
// small. It is what jsonrpc.DecodeMessage makes of that line (an integer
// id, as the go-sdk numbers its requests, goes through float64 there too);
// false for anything else (a string id, a version tag other than 2.0), which
// takes the decoder's path and its checks.
func placeholderResponse(f fields) (*jsonrpc.Response, bool) {
	if string(f.version) != `"2.0"` {
		return nil, false
	}
	n, err := strconv.ParseInt(string(f.id), 10, 64)
	if err != nil {
		return nil, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil || !id.IsValid() {
		return nil, false
	}
	return &jsonrpc.Response{ID: id, Result: placeholderResult}, true
}

// tieLog ties a log message to the tool call it came with. stdio has one
// stream and no field that relates a notification to a request; but a
// server that logs while it handles a call writes the message before its
// answer, so a message that comes while exactly one call is in flight on
// the connection is that call's (see [tagLog]). With no call, or several,
// in flight it belongs to none.
func (c *lineConn) tieLog(line []byte) []byte {
	c.mu.Lock()
	var call *callWatch
	if len(c.pending) == 1 {
		for _, slot := range c.pending {
			call = slot.call
		}
	}
	c.mu.Unlock()
	return tagLog(line, call)
}

// decodeBatch decodes a JSON array of messages; they are all small, or
// rare enough to take the go-sdk's decoding path.
func decodeBatch(line []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		return nil, fmt.Errorf("the server sent an invalid or empty batch (%v)", err)
	}
	msgs := make([]jsonrpc.Message, len(raws))
	for i, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

// fields are the spans of a JSON-RPC message's top-level members.
type fields struct{ version, id, method, result, err []byte }

// envelope finds the jsonrpc, id, method, result and error members of the JSON object in
// line, which must be valid JSON, without copying or decoding them.
func envelope(line []byte) fields {
	var f fields
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return f
	}
	i++
	for {
		i = skipSpace(line, i)
		if i >= len(line) || line[i] != '"' {
			return f
		}
		end := skipValue(line, i)
		var key string
		if json.Unmarshal(line[i:end], &key) != nil {
			return f
		}
		i = skipSpace(line, end) + 1 // past ':'
		i = skipSpace(line, i)
		end = skipValue(line, i)
		switch key {
		case "jsonrpc":
			f.version = line[i:end]
		case "id":
			f.id = line[i:end]
		case "method":
			f.method = line[i:end]
		case "result":
			f.result = line[i:end]
		case "error":
			f.err = line[i:end]
		}
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ',' {
			return f
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at i
// in b, which must be valid JSON.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			continue
		case '}', ']':
			if depth == 0 {
				return i // the end of a number or literal
			}
			depth--
		case ',', ':', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i // the end of a number or literal
			}
			continue
		default:
			continue // inside a number or literal
		}
		if depth == 0 {
			return i + 1
		}
	}
	return i
}
