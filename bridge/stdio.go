package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/codebridge/codebridge/internal/envelope"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the transport the bridge serves MCP on over stdin and
// stdout: newline-delimited JSON-RPC, read and written as the go-sdk's
// IOTransport does, but a message alone on its line is made from its
// envelope (internal/envelope), its params left as the bytes the client
// sent. The go-sdk's reading decodes each message three times (as a batch,
// which fails; as a message; its method), each time with a 32 KiB buffer.
//
// What the envelope cannot prove it reads as the go-sdk does (a member
// given twice or under an escaped name, an id that is not a plain integer
// or string, an error, nesting over the go-sdk's limit) goes through
// jsonrpc.DecodeMessage, as the go-sdk would decode it; anything that is
// not one JSON object on a line of its own (a batch, a message over
// several lines, a line over [fastLineLimit], the end of the input) hands
// the rest of the input, from that line on, to the go-sdk's IOTransport,
// which then reads and writes everything: behaviour and errors stay its
// own. (How the go-sdk reads such input can depend on where its reads of
// the input end; a hand-over is one such end: the start of a line, or,
// for a long line, where this transport stopped reading it.)
type StdioTransport struct {
	Reader io.Reader // not closed
	Writer io.Writer // not closed
}

// fastLineLimit is the longest line StdioTransport reads itself. The
// go-sdk bounds a message at mcp.DefaultMaxLineLength (16 MiB), counted
// over what its decoder buffered; a line far below that bound is within
// it however the reads fell.
const fastLineLimit = 1 << 20

// maxDepth is the go-sdk's bound on the nesting of a message it decodes.
const maxDepth = 1000

// Connect starts reading the input.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{w: t.Writer, incoming: make(chan stdioRead), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(t.Reader, 64<<10))
	return c, nil
}

// stdioRead is what the reading goroutine hands Read: a message, an
// error, or the go-sdk's connection that reads from here on.
type stdioRead struct {
	msg      jsonrpc.Message
	err      error
	handover mcp.Connection
}

// stdioConn is one connection of a StdioTransport.
type stdioConn struct {
	incoming chan stdioRead
	closed   chan struct{}
	once     sync.Once
	reading  mcp.Connection // the go-sdk's, once handed over; Read's own (reads are serialised)

	wmu   sync.Mutex
	w     io.Writer
	inner mcp.Connection // the go-sdk's, once handed over; writes go through it then
}

// Read returns the next message.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.reading != nil {
		return c.reading.Read(ctx)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.incoming:
		if v.handover != nil {
			c.reading = v.handover
			return c.reading.Read(ctx)
		}
		return v.msg, v.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write writes msg as one line, as the go-sdk's IOTransport does (through
// it once the reading was handed over: it answers batches as batches).
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.inner != nil {
		return c.inner.Write(ctx, msg)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	_, err = c.w.Write(append(data, '\n'))
	return err
}

// Close ends the connection: a Read in progress returns io.EOF.
func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	c.wmu.Lock()
	inner := c.inner
	c.wmu.Unlock()
	if inner != nil {
		return inner.Close()
	}
	return nil
}

// SessionID is empty: stdio has no sessions.
func (c *stdioConn) SessionID() string { return "" }

// readLoop reads lines until one it does not read itself, or the end of
// the input, or an error.
func (c *stdioConn) readLoop(r *bufio.Reader) {
	for {
		line, err := nextLine(r)
		if err == nil && blank(line) {
			continue
		}
		if err != nil && blank(line) {
			c.deliver(stdioRead{err: err}) // io.EOF at the end, as the go-sdk's decoder says
			return
		}
		if err == nil {
			if msg, derr, ok := decodeLine(line); ok {
				if !c.deliver(stdioRead{msg: msg, err: derr}) {
					return
				}
				continue
			}
		}
		var rest io.Reader = r
		if err != nil {
			rest = errReader{err}
		}
		c.handOver(io.MultiReader(bytes.NewReader(line), rest))
		return
	}
}

// handOver gives the rest of the input, from in, to the go-sdk's
// IOTransport.
func (c *stdioConn) handOver(in io.Reader) {
	inner, err := (&mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{c.w}}).Connect(context.Background())
	if err != nil {
		c.deliver(stdioRead{err: err})
		return
	}
	c.wmu.Lock()
	c.inner = inner
	c.wmu.Unlock()
	if !c.deliver(stdioRead{handover: inner}) {
		_ = inner.Close()
	}
}

// deliver hands v to Read; false when the connection closed.
func (c *stdioConn) deliver(v stdioRead) bool {
	select {
	case c.incoming <- v:
		return true
	case <-c.closed:
		return false
	}
}

// nextLine returns the next line with its newline, in a buffer of its
// own. A line over fastLineLimit comes back as far as it was read, and
// with no error: the caller hands it over. At an error (io.EOF too) it
// returns what it read before it.
func nextLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if err == nil && line == nil {
			return bytes.Clone(chunk), nil
		}
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull) && len(line) <= fastLineLimit:
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			return line, nil // too long to read here: handed over, unfinished
		}
		return line, err
	}
}

// blank reports whether b is only JSON whitespace (which the go-sdk's
// decoder skips between messages).
func blank(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// decodeLine makes the message of a line that is one JSON object followed
// by its newline (spaces before it are allowed, a carriage return before
// the newline too; the go-sdk reads such a line as that one message).
// false: the line is anything else, and is handed over. The error is
// jsonrpc.DecodeMessage's, which the go-sdk's Read would return.
func decodeLine(line []byte) (jsonrpc.Message, error, bool) {
	body, ended := bytes.CutSuffix(line, []byte("\n"))
	if !ended { // a long line cut short: what follows on it counts too
		return nil, nil, false
	}
	obj := bytes.TrimLeft(bytes.TrimSuffix(body, []byte("\r")), " \t\r")
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' || !json.Valid(obj) {
		return nil, nil, false
	}
	if msg, ok := fastMessage(obj); ok {
		return msg, nil, true
	}
	msg, err := jsonrpc.DecodeMessage(obj)
	return msg, err, true
}

// fastMessage is the message obj holds, made from its envelope; false
// when it is not one the envelope can prove jsonrpc.DecodeMessage would
// make the same: a request or notification with a plain method name, or
// a response with a result, tagged "2.0", with a plain id.
func fastMessage(obj []byte) (jsonrpc.Message, bool) {
	f := envelope.Of(obj)
	if f.Unusual || string(f.Version) != `"2.0"` || f.Error != nil || !utf8.Valid(obj) || envelope.Deeper(obj, maxDepth) {
		return nil, false
	}
	id, ok := plainID(f.ID)
	if !ok {
		return nil, false
	}
	switch {
	case f.Method != nil && f.Result == nil:
		method, ok := plainString(f.Method)
		if !ok || string(f.Params) == "null" {
			return nil, false
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: clip(f.Params)}, true
	case f.Method == nil && f.Result != nil && id.IsValid() && string(f.Result) != "null":
		return &jsonrpc.Response{ID: id, Result: clip(f.Result)}, true
	}
	return nil, false
}

// plainID is the id whose JSON is raw: none, an integer of at most 15
// digits (the go-sdk reads ids as float64, exact up to 2^53), or a string
// with no escapes.
func plainID(raw []byte) (jsonrpc.ID, bool) {
	if raw == nil {
		return jsonrpc.ID{}, true
	}
	if s, ok := plainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || len(bytes.Trim(digits, "0123456789")) > 0 {
		return jsonrpc.ID{}, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// plainString is the text of a JSON string written with no escapes.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// clip is b with no room to grow into the line after it; nil stays nil.
func clip(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return b[:len(b):len(b)]
}
