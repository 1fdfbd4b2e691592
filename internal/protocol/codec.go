package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Encode returns f as one line: a JSON object with "t" first, ending in
// "\n". JSON escapes every newline inside strings, so the line has no other.
func Encode(f Frame) ([]byte, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("protocol: encoding a %s frame: %w", f.Type(), err)
	}
	out := make([]byte, 0, len(body)+len(f.Type())+10)
	out = append(out, `{"t":`...)
	out = strconv.AppendQuote(out, f.Type())
	if len(body) > 2 { // not "{}"
		out = append(out, ',')
	}
	out = append(out, body[1:]...)
	return append(out, '\n'), nil
}

// ResultParts returns a successful [Result] for RPC id as pieces to write
// one after the other, the value among them uncopied: a 64 MiB tool result
// must not cost another 64 MiB. value must be valid JSON; a value with
// newlines (indented JSON) is compacted, since a frame is one line.
func ResultParts(id int64, value json.RawMessage) ([][]byte, error) {
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	if bytes.IndexByte(value, '\n') >= 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, value); err != nil {
			return nil, fmt.Errorf("protocol: the result of RPC %d is not JSON: %w", id, err)
		}
		value = c.Bytes()
	}
	head := `{"t":"result","id":` + strconv.FormatInt(id, 10) + `,"ok":true,"value":`
	return [][]byte{[]byte(head), value, []byte("}\n")}, nil
}

// notAFrameError reports a line that is not a frame at all: not a JSON
// object, or one without a type. The channel cannot be trusted after one.
type notAFrameError struct{ Msg string }

func (e *notAFrameError) Error() string { return e.Msg }

// ShapeError reports a frame of a known type whose fields have the wrong
// shape (an id that is a string, say). It does not break the channel: the
// frame is ignored, or, for an RPC whose ID could be read, answered with an
// error.
type ShapeError struct {
	T     string
	ID    int64 // the frame's id when it could be read, else 0
	Cause error
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("protocol: a %s frame has fields of the wrong shape: %v", e.T, e.Cause)
}

func (e *ShapeError) Unwrap() error { return e.Cause }

// Decode reads one line into the frame type its "t" names. A type this
// host does not know gives [Unknown] and no error; a line that is not a
// frame gives an error that says so; a known type with fields of the wrong
// shape gives a [*ShapeError].
func Decode(line []byte) (Frame, error) {
	t, err := frameType(line)
	if err != nil {
		return nil, err
	}
	decode, ok := decoders[t]
	if !ok {
		return Unknown{T: t}, nil
	}
	f, err := decode(line)
	if err != nil {
		return nil, &ShapeError{T: t, ID: peekID(line), Cause: err}
	}
	return f, nil
}

// frameType reads "t" cheaply when it comes first, as both sides write it;
// otherwise it decodes the object's keys.
func frameType(line []byte) (string, error) {
	line = bytes.TrimSpace(line)
	const prefix = `{"t":"`
	if bytes.HasPrefix(line, []byte(prefix)) {
		rest := line[len(prefix):]
		if end := bytes.IndexByte(rest, '"'); end > 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return string(rest[:end]), nil
		}
	}
	var head struct {
		T *string `json:"t"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field == "t" {
			return "", &notAFrameError{Msg: fmt.Sprintf("a frame whose type is not a string (%q...)", clip(line, 80))}
		}
		return "", &notAFrameError{Msg: fmt.Sprintf("a line that is not a frame (%q...): %v", clip(line, 80), err)}
	}
	if head.T == nil || *head.T == "" {
		return "", &notAFrameError{Msg: fmt.Sprintf("a frame without a type (%q...)", clip(line, 80))}
	}
	return *head.T, nil
}

// decoders decode a line into each frame type, by "t".
var decoders = map[string]func([]byte) (Frame, error){
	THello: decodeAs[Hello], TExec: decodeAs[Exec], TInterrupt: decodeAs[Interrupt],
	TResult: decodeAs[Result], TReady: decodeAs[Ready], TOut: decodeAs[Out],
	TImage: decodeAs[Image], TRPC: decodeAs[RPC], TDone: decodeAs[Done], TLog: decodeAs[Log],
	TPut: decodeAs[Put], TStored: decodeAs[Stored],
	TGet: decodeAs[Get], TGot: decodeAs[Got],
	TChannel: decodeAs[Channel], TConnect: decodeAs[Connect],
	TResume: decodeAs[Resume], TResumed: decodeAs[Resumed], TMoved: decodeAs[Moved],
	TRewind: decodeAs[Rewind], TRewound: decodeAs[Rewound],
	TForked: decodeAs[Forked], TEnd: decodeAs[End], THandover: decodeAs[Handover],
}

func decodeAs[F Frame](line []byte) (Frame, error) {
	var f F
	err := json.Unmarshal(line, &f)
	return f, err
}

// peekID reads the "id" of a frame whose other fields did not decode.
func peekID(line []byte) int64 {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &head) != nil {
		return 0
	}
	id, err := strconv.ParseInt(string(head.ID), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
