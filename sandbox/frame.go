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

// Frame types, as runtime/PROTOCOL.md defines them.
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
	T      string          `json:"t"`
	ID     int64           `json:"id"`
	Exec   int64           `json:"exec"`
	Stream string          `json:"stream"`
	Data   string          `json:"data"`
	Mime   string          `json:"mime"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Status string          `json:"status"`
	Value  *string         `json:"value"`
	Error  *string         `json:"error"`
	Python string          `json:"python"`
	Level  string          `json:"level"`
	Msg    string          `json:"msg"`
}

// frameReader decodes newline-delimited frames. It has no size limit: a
// frame is as long as its line.
type frameReader struct {
	r *bufio.Reader
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next frame. Blank lines are skipped; a line that is not a
// JSON object is an error naming its first bytes, since the channel is
// private to the runtime and garbage there means the runtime is broken.
func (fr *frameReader) next() (*frame, error) {
	for {
		line, err := fr.r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		var f frame
		if jerr := json.Unmarshal(line, &f); jerr != nil {
			return nil, fmt.Errorf("sandbox: runtime sent a line that is not a frame (%q...): %w", clip(line, 80), jerr)
		}
		if f.T == "" {
			return nil, fmt.Errorf("sandbox: runtime sent a frame without a type (%q...)", clip(line, 80))
		}
		return &f, nil
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
	fw.buf = append(append(append(fw.buf[:0], head...), value...), "}\n"...)
	_, err := fw.w.Write(fw.buf)
	if cap(fw.buf) > 1<<20 {
		fw.buf = nil // do not pin a large result's buffer
	}
	return err
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
