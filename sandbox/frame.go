package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Frame types, as pyruntime/PROTOCOL.md defines them.
const (
	frameHello     = "hello"
	frameExec      = "exec"
	frameInterrupt = "interrupt"
	frameResult    = "result"
	frameReady     = "ready"
	frameOut       = "out"
	frameImage     = "image"
	frameRPC       = "rpc"
	frameDone      = "done"
	frameLog       = "log"
)

// frame is one decoded message from the runtime. Fields not used by a type
// stay zero. Params stays raw: the RPC handler decodes it.
type frame struct {
	T      string            `json:"t"`
	ID     int64             `json:"id"`
	Exec   int64             `json:"exec"`
	Stream string            `json:"stream"`
	Data   string            `json:"data"`
	Mime   string            `json:"mime"`
	Method string            `json:"method"`
	Params json.RawMessage   `json:"params"`
	Status string            `json:"status"`
	Value  *string           `json:"value"`
	Error  *string           `json:"error"`
	JSON   json.RawMessage   `json:"json"`  // done: the final value as JSON
	Spill  map[string]*Spill `json:"spill"` // done: streams saved to files
	Python string            `json:"python"`
	Level  string            `json:"level"`
	Msg    string            `json:"msg"`
}

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

// frameReader decodes newline-delimited frames of up to max bytes.
type frameReader struct {
	r    *bufio.Reader
	max  int
	line []byte // reused between frames; frames copy what they keep
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 256<<10), max: MaxFrame}
}

// next returns the next frame. Blank lines are skipped; a line that is not a
// JSON object, or longer than the limit, is a [ProtocolError] naming its
// first bytes, since the channel is private to the runtime and garbage there
// means the runtime is broken (or code in the sandbox wrote to it).
func (fr *frameReader) next() (*frame, error) {
	for {
		line, err := fr.readLine()
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		var f frame
		jerr := json.Unmarshal(line, &f)
		if cap(fr.line) > 1<<20 {
			fr.line = nil // do not pin a large frame's buffer
		}
		if jerr != nil {
			return nil, protocolErrorf("sandbox: the runtime sent a line that is not a frame (%q...): %v", clip(line, 80), jerr)
		}
		if f.T == "" {
			return nil, protocolErrorf("sandbox: the runtime sent a frame without a type (%q...)", clip(line, 80))
		}
		return &f, nil
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
		if err != bufio.ErrBufferFull {
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

// frameWriter encodes frames to the runtime. It is safe for concurrent use:
// RPC answers are written from many goroutines.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newFrameWriter(w io.Writer) *frameWriter { return &frameWriter{w: w} }

// send writes one frame built from fields: v is marshalled, and must encode
// to a JSON object.
func (fw *frameWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("sandbox: encoding frame: %w", err)
	}
	return fw.write(b)
}

// sendResult answers RPC id. value must be valid JSON (it is spliced in
// unchanged, to spare a copy of large tool results); errMsg, when non-empty,
// makes it a failed RPC.
func (fw *frameWriter) sendResult(id int64, value json.RawMessage, errType, errMsg string) error {
	if errMsg != "" {
		return fw.send(map[string]any{
			"t": frameResult, "id": id, "ok": false,
			"error": map[string]string{"type": errType, "message": errMsg},
		})
	}
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	if bytes.IndexByte(value, '\n') >= 0 {
		// Compact keeps the frame on one line; valid JSON only has
		// newlines as whitespace.
		var c bytes.Buffer
		if err := json.Compact(&c, value); err != nil {
			return fmt.Errorf("sandbox: RPC %d result is not JSON: %w", id, err)
		}
		value = c.Bytes()
	}
	head := `{"t":"result","id":` + strconv.FormatInt(id, 10) + `,"ok":true,"value":`
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(value) > 64<<10 {
		// A large value is written in place rather than copied into one
		// buffer: a 64 MiB tool result must not cost another 64 MiB.
		return writeAll(fw.w, []byte(head), value, []byte("}\n"))
	}
	fw.buf = append(append(append(fw.buf[:0], head...), value...), "}\n"...)
	_, err := fw.w.Write(fw.buf)
	return err
}

func writeAll(w io.Writer, parts ...[]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func (fw *frameWriter) write(b []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.buf = append(append(fw.buf[:0], b...), '\n')
	_, err := fw.w.Write(fw.buf)
	if cap(fw.buf) > 1<<20 {
		fw.buf = nil
	}
	return err
}

// errChannelClosed reports that the runtime's frame stream ended.
var errChannelClosed = errors.New("sandbox: the runtime's frame channel closed")

// writeRaw writes bytes that are not frames (the bootstrap header and
// archive), under the same lock as frames.
func (fw *frameWriter) writeRaw(parts ...[]byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for _, p := range parts {
		if _, err := fw.w.Write(p); err != nil {
			return err
		}
	}
	return nil
}
