package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/codebridge/codebridge/internal/protocol"
)

// MaxFrame bounds one frame from the runtime. Frames are untrusted: code
// in the sandbox can write to the runtime's descriptors, and a line without
// end must not take the host's memory. Output arrives in frames of at most
// 1 MiB characters; the largest legitimate frame is an RPC carrying a 64 MiB
// tool argument, which JSON escaping can make a few times larger.
const MaxFrame = 256 << 20

// ProtocolError reports that the runtime broke the frame protocol: a line
// that is not a frame, or a frame over [MaxFrame]. The runtime cannot be
// trusted after one; the session replaces the container.
type ProtocolError struct{ msg string }

func (e *ProtocolError) Error() string { return e.msg }

func protocolErrorf(format string, a ...any) error {
	return &ProtocolError{msg: fmt.Sprintf(format, a...)}
}

// malformed is a frame of a known type whose fields had the wrong shape.
// It does not break the channel: a cell answers a malformed RPC with an
// error when its id could be read, and ignores anything else.
type malformed struct{ err *protocol.ShapeError }

func (m malformed) Type() string { return m.err.T }

// frameReader decodes newline-delimited frames of up to max bytes.
type frameReader struct {
	r    *bufio.Reader
	max  int
	line []byte // reused between frames; frames copy what they keep
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 256<<10), max: MaxFrame}
}

// next returns the next frame. Blank lines are skipped. A line that is not
// a frame, or is longer than the limit, is a [ProtocolError] naming its
// first bytes, since the channel is private to the runtime and garbage there
// means the runtime is broken (or code in the sandbox wrote to it). A frame
// of a known type with fields of the wrong shape comes back as [malformed].
func (fr *frameReader) next() (protocol.Frame, error) {
	for {
		line, err := fr.readLine()
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		f, derr := protocol.Decode(line)
		if cap(fr.line) > 1<<20 {
			fr.line = nil // do not pin a large frame's buffer
		}
		var shape *protocol.ShapeError
		switch {
		case errors.As(derr, &shape):
			return malformed{shape}, nil
		case derr != nil:
			return nil, protocolErrorf("sandbox: the runtime sent %v", derr)
		}
		return f, nil
	}
}

// readLine reads up to and including the next newline, or to the end of
// the stream. A line over fr.max bytes is an error, found before more than
// fr.max bytes of it are held.
func (fr *frameReader) readLine() ([]byte, error) {
	fr.line = fr.line[:0]
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(fr.line)+len(chunk) > fr.max {
			head := fr.line
			if len(head) < 80 {
				head = append(head, chunk[:min(80-len(head), len(chunk))]...)
			}
			fr.line = nil
			return nil, protocolErrorf("sandbox: the runtime sent a frame over the %s limit (%q...)", sizeText(int64(fr.max)), clip(head, 80))
		}
		fr.line = append(fr.line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return fr.line, err
		}
	}
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// errChannelClosed reports that the runtime's frame stream ended.
var errChannelClosed = errors.New("sandbox: the runtime's frame channel closed")

// errMoved reports that a detachable runtime said, with a moved frame,
// that another host took its channel over: nothing more comes on this one.
var errMoved = errors.New("sandbox: another bridge took the runtime's channel over")

// errDropped is what a write learns when its frame was not written: its
// cell ended first, or the container is going away.
var errDropped = errors.New("sandbox: the frame was dropped (its cell ended, or the container is being replaced)")

// outbox writes frames to the runtime from one goroutine of its own, so
// that no caller ever blocks on the container's stdin: a runtime that stops
// reading fills the pipe and stalls only the outbox, while the session's
// timeouts, interrupts and replacement go on. Removing the container closes
// the stream, which ends a write that is stuck. Writes are in order, except
// that urgent ones (interrupts) go before those still waiting.
type outbox struct {
	w    io.Writer
	cell atomic.Int64 // the running cell; answers for other cells are dropped

	mu     sync.Mutex
	queue  []*outItem
	closed bool
	wake   chan struct{}
}

// outItem is one frame (or bootstrap bytes) to write, in parts.
type outItem struct {
	parts [][]byte
	cell  int64           // the cell it belongs to; 0 for none
	done  func(err error) // called once, after the write or the drop; may be nil
}

func newOutbox(w io.Writer) *outbox {
	o := &outbox{w: w, wake: make(chan struct{}, 1)}
	go o.loop()
	return o
}

// post queues it and returns at once.
func (o *outbox) post(it *outItem, urgent bool) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		it.finish(errDropped)
		return
	}
	if urgent {
		o.queue = append([]*outItem{it}, o.queue...)
	} else {
		o.queue = append(o.queue, it)
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// backlog is how many items wait to be written.
func (o *outbox) backlog() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue)
}

// send queues frame f for cell (0: for no cell in particular).
func (o *outbox) send(f protocol.Frame, cell int64, urgent bool, done func(error)) {
	line, err := protocol.Encode(f)
	if err != nil {
		(&outItem{done: done}).finish(err)
		return
	}
	o.post(&outItem{parts: [][]byte{line}, cell: cell, done: done}, urgent)
}

// write queues parts and waits until they are written, the outbox closes,
// or ctx ends.
func (o *outbox) write(ctx context.Context, parts ...[]byte) error {
	res := make(chan error, 1)
	o.post(&outItem{parts: parts, done: func(err error) { res <- err }}, false)
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop writes what is queued. Everything waiting goes out in one write
// (writev on the direct channel's socket): an answer's frame is in parts
// (protocol.ResultParts), and gathered calls' answers pile up while a
// write is in progress; one system call each would wake the runtime's
// reader for each part.
func (o *outbox) loop() {
	var parts [][]byte
	var sent []*outItem
	for {
		items, ok := o.pop()
		if !ok {
			return
		}
		parts, sent = parts[:0], sent[:0]
		for _, it := range items {
			if it.cell != 0 && it.cell != o.cell.Load() {
				it.finish(errDropped)
				continue
			}
			parts = append(parts, it.parts...)
			sent = append(sent, it)
		}
		bufs := net.Buffers(parts) // WriteTo consumes bufs, not parts
		_, err := bufs.WriteTo(o.w)
		for _, it := range sent {
			it.finish(err)
		}
		clear(parts)
		clear(sent)
		if err != nil {
			o.close()
			return
		}
	}
}

// pop waits for what is queued and takes all of it; false once the
// outbox is closed.
func (o *outbox) pop() ([]*outItem, bool) {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return nil, false
		}
		if len(o.queue) > 0 {
			items := o.queue
			o.queue = nil
			o.mu.Unlock()
			return items, true
		}
		o.mu.Unlock()
		<-o.wake
	}
}

// close drops what waits and refuses what comes. A write in progress ends
// when the container's stream closes.
func (o *outbox) close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	queue := o.queue
	o.queue = nil
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	for _, it := range queue {
		it.finish(errDropped)
	}
}

func (it *outItem) finish(err error) {
	if it.done != nil {
		it.done(err)
	}
}
