package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/internal/envelope"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is the transport to a stdio upstream: newline-delimited
// JSON-RPC over its stdout and stdin. Unlike the go-sdk's IOTransport it
// passes tools/call results through without decoding them: the raw bytes
// of the result go to the call's [rawSlot], and the go-sdk receives a
// small placeholder. A 200 MiB result then costs the bridge its bytes
// once, not a decoded copy and a re-encoded one on top.
type lineTransport struct {
	r          io.ReadCloser
	w          io.WriteCloser
	maxMessage int
	calls      *callWatchers // the server's tool calls in flight, found by their progress tokens; nil: none
	conn       *lineConn     // the connection Connect made, for the bridge's own requests
}

// Connect starts reading the server's output.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		w:        t.w,
		r:        t.r,
		calls:    t.calls,
		incoming: make(chan lineOrErr),
		closed:   make(chan struct{}),
		prefix:   newIDPrefix(),
		pending:  map[string]*rawSlot{},
		sdk:      map[string]jsonrpc.ID{},
		wireOf:   map[string]string{},
	}
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10), t.maxMessage)
	t.conn = c
	return c, nil
}

// errReading marks the error that ended a connection's reading: the
// session is over.
var errReading = errors.New("reading from the server")

// placeholderResult is what the go-sdk decodes in place of a tools/call
// result whose raw bytes went to a rawSlot (an empty CallToolResult).
var placeholderResult = json.RawMessage(`{"content":[],"contents":[]}`)

// rawSlot receives the raw result of one request: a parameter of the
// bridge's own requests ([lineConn.request]), or, for a tools/call the
// go-sdk sends (a session on a newer protocol), the slot of the call's
// watch, which the connection finds by the request's progress token.
type rawSlot struct {
	raw     json.RawMessage
	release func()     // forgets the request when no response came
	call    *callWatch // the tool call the request is (nil for a resource read)

	// For a request the bridge sent itself ([lineConn.request]): its
	// method, for errors, and done, closed once raw or err is set (nil for
	// a request of the go-sdk's).
	method string
	done   chan struct{}
	err    error
}

type lineOrErr struct {
	msg jsonrpc.Message
	err error
}

// lineConn is one connection of a lineTransport.
//
// Every request the server sees carries an id of this connection's own: a
// random prefix and a number ([lineConn.newID]), for the go-sdk's requests
// too, whose ids Write replaces and decode puts back. An answer whose id
// names no request in flight on this connection is dropped, so a server
// (shared by several principals) that answers with an id it guessed, or
// one it saw before, reaches no caller; and no server can count, from the
// ids, the requests the bridge sends to others.
type lineConn struct {
	r        io.Closer
	w        io.WriteCloser
	wmu      sync.Mutex
	incoming chan lineOrErr
	closed   chan struct{}
	once     sync.Once
	prefix   string        // random, this connection's: the start of every request id
	ids      atomic.Int64  // numbers this connection's requests
	calls    *callWatchers // the server's tool calls in flight; nil: none

	mu      sync.Mutex
	pending map[string]*rawSlot   // JSON id of an unanswered request with a slot -> its slot
	sdk     map[string]jsonrpc.ID // JSON id of a go-sdk request in flight -> the go-sdk's own id
	wireOf  map[string]string     // the go-sdk's id (JSON) -> the id the server saw (JSON)
}

// newIDPrefix is a connection's random id prefix: 64 bits, as hex.
func newIDPrefix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "cb-" + hex.EncodeToString(b[:]) + "-"
}

// newID is the next request id of the connection, as JSON (a string).
func (c *lineConn) newID() string {
	return `"` + c.prefix + strconv.FormatInt(c.ids.Add(1), 10) + `"`
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

// Write sends msg to the server. A request of the go-sdk's goes out under
// an id of the connection's own (see [lineConn]); a tools/call request
// of a call in flight (found by its progress token) is remembered, so
// that its result goes to the call's slot.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.IsCall() {
			return c.writeRequest(req)
		}
		if req.Method == "notifications/cancelled" {
			if msg, ok = c.cancelledNotice(req); !ok {
				return nil // its request was answered: nothing to cancel
			}
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(append(data, '\n'))
}

// writeRequest sends a request of the go-sdk's under a new id of the
// connection's, and remembers the go-sdk's id for the answer.
func (c *lineConn) writeRequest(req *jsonrpc.Request) error {
	own, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return err
	}
	wire := c.newID()
	out := *req
	if out.ID, err = jsonrpc.MakeID(wire[1 : len(wire)-1]); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(&out)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.sdk[wire] = req.ID
	c.wireOf[string(own)] = wire
	if slot := c.slotOf(req); slot != nil {
		c.pending[wire] = slot
		slot.release = func() {
			c.mu.Lock()
			delete(c.pending, wire)
			c.mu.Unlock()
		}
	}
	c.mu.Unlock()
	if err := c.writeLine(append(data, '\n')); err != nil {
		c.mu.Lock()
		c.answered(wire)
		delete(c.pending, wire)
		c.mu.Unlock()
		return err
	}
	return nil
}

// slotOf is the slot of the tool call a request of the go-sdk's is, found
// by the progress token its _meta carries, or nil.
func (c *lineConn) slotOf(req *jsonrpc.Request) *rawSlot {
	if req.Method != "tools/call" {
		return nil
	}
	if w := c.calls.callOf(progressTokenOf(json.NewDecoder(bytes.NewReader(req.Params)))); w != nil {
		return w.slot
	}
	return nil
}

// answered forgets the go-sdk's request that went out as wire and returns
// its id, or false when no such request is in flight. The caller holds
// c.mu.
func (c *lineConn) answered(wire string) (jsonrpc.ID, bool) {
	id, ok := c.sdk[wire]
	if ok {
		delete(c.sdk, wire)
		if own, err := json.Marshal(id.Raw()); err == nil {
			delete(c.wireOf, string(own))
		}
	}
	return id, ok
}

// cancelledNotice is the go-sdk's notifications/cancelled with the id the
// server saw in place of the go-sdk's; false when that request is no
// longer in flight (answered, or never sent).
func (c *lineConn) cancelledNotice(req *jsonrpc.Request) (*jsonrpc.Request, bool) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return nil, false
	}
	c.mu.Lock()
	wire, ok := c.wireOf[string(params["requestId"])]
	if ok {
		c.answered(wire)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	params["requestId"] = json.RawMessage(wire)
	p, err := json.Marshal(params)
	if err != nil {
		return nil, false
	}
	out := *req
	out.Params = p
	return &out, true
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
				// Free the blocks (dead once joined), and what earlier
				// large messages left, now: the next large message then
				// reuses that memory instead of adding to the bridge's
				// peak. The buffers hold no pointers, so this collection
				// is quick.
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
// carries the placeholder instead. An answer to no request in flight on
// the connection is dropped.
func (c *lineConn) decode(line []byte) ([]jsonrpc.Message, error) {
	if line[0] == '[' {
		return c.decodeBatch(line)
	}
	if !json.Valid(line) {
		return nil, errors.New("the server sent a line that is not JSON")
	}
	f := envelope.Of(line)
	if string(f.Method) == `"notifications/message"` {
		line = c.tieLog(line)
	}
	if f.Method != nil || f.ID == nil {
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{msg}, nil
	}
	c.mu.Lock()
	slot := c.pending[string(f.ID)]
	own := slot != nil && slot.done != nil
	if own || f.Result != nil {
		delete(c.pending, string(f.ID))
	}
	id, ok := c.answered(string(f.ID))
	c.mu.Unlock()
	switch {
	case own: // the bridge's own request: nothing for the go-sdk
		slot.settle(f)
		return nil, nil
	case !ok: // a guessed id, or an answer already given
		return nil, nil
	case slot != nil && f.Result != nil:
		// Made without decoding the placeholder: the go-sdk's decoder
		// allocates a 32 KiB buffer for every message, however small.
		slot.raw = f.Result
		return []jsonrpc.Message{&jsonrpc.Response{ID: id, Result: placeholderResult}}, nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	if !isResp {
		return nil, errors.New("the server sent a message with an id and no method that is not a response")
	}
	resp.ID = id
	return []jsonrpc.Message{resp}, nil
}

// request sends a request (tools/call or resources/read) with params
// (encoded, compact: one line) itself, not through the go-sdk, and returns the result as the server
// sent it, undecoded. The go-sdk would decode the placeholder of every
// result twice, each time with a 32 KiB buffer, and hand the response
// through two goroutines; here the reading goroutine hands it straight to
// the caller, through slot. Only for a session on the legacy protocol
// (which is what the bridge asks for): there a request is one request and
// one response, with no multi-round-trip retries. slot.call is the tool
// call's watch (log messages that come while it is the only request in
// flight are tied to it). The errors are the go-sdk's: a JSON-RPC error
// as a *jsonrpc.Error, the connection's end as mcp.ErrConnectionClosed or
// errReading, and ctx's end as ctx.Err(), after which the server is told
// the request is cancelled.
func (c *lineConn) request(ctx context.Context, method string, params []byte, slot *rawSlot) (json.RawMessage, error) {
	id := c.newID()
	slot.method, slot.done = method, make(chan struct{})
	c.mu.Lock()
	c.pending[id] = slot
	c.mu.Unlock()
	line := make([]byte, 0, len(params)+len(id)+len(method)+48)
	line = append(append(append(line, `{"jsonrpc":"2.0","id":`...), id...), `,"method":"`...)
	line = append(append(append(line, method...), `","params":`...), params...)
	if err := c.writeLine(append(line, "}\n"...)); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("calling %q: %w", method, err)
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
		return nil, fmt.Errorf("%w: calling %q: the connection is closed", mcp.ErrConnectionClosed, method)
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
func (slot *rawSlot) settle(f envelope.Fields) {
	defer close(slot.done)
	if f.Error != nil && string(f.Error) != "null" {
		var werr jsonrpc.Error
		if err := json.Unmarshal(f.Error, &werr); err != nil {
			slot.err = fmt.Errorf("calling %q: the server's error response cannot be read: %w", slot.method, err)
			return
		}
		slot.err = fmt.Errorf("calling %q: %w", slot.method, &werr)
		return
	}
	if f.Result == nil {
		slot.err = fmt.Errorf("calling %q: the server's response has neither a result nor an error", slot.method)
		return
	}
	slot.raw = f.Result
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
// rare enough to take the go-sdk's decoding path. A response takes the
// go-sdk's id back, or is dropped as decode drops it.
func (c *lineConn) decodeBatch(line []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		return nil, fmt.Errorf("the server sent an invalid or empty batch (%v)", err) //nolint:errorlint // the cause is a verdict on bytes a sandbox or an upstream sent: its text is kept, its kind never chosen by it
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if resp, ok := m.(*jsonrpc.Response); ok {
			wire, err := json.Marshal(resp.ID.Raw())
			if err != nil {
				return nil, err
			}
			c.mu.Lock()
			id, ok := c.answered(string(wire))
			c.mu.Unlock()
			if !ok {
				continue
			}
			resp.ID = id
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
