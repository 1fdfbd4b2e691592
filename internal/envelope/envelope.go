package envelope

import (
	"bytes"
	"encoding/json"
)

// Fields are the spans of a JSON-RPC message's top-level members; a
// member that is not there is nil.
type Fields struct {
	Version, ID, Method, Params, Result, Error []byte

	// Unusual is set when a top-level key was written with an escape or
	// one of the members above came twice: a reader that must decode
	// exactly as a JSON decoder would should not trust the spans then.
	Unusual bool
}

// Of finds the jsonrpc, id, method, params, result and error members of
// the JSON object in line, which must be valid JSON, without copying or
// decoding them. For anything but an object it returns no members. When
// a member comes twice, the last one counts, as in encoding/json.
func Of(line []byte) Fields {
	var f Fields
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
		key, plain := keyOf(line[i:end])
		if !plain {
			f.Unusual = true
		}
		i = skipSpace(line, end) + 1 // past ':'
		i = skipSpace(line, i)
		end = skipValue(line, i)
		if span := f.member(key); span != nil {
			if *span != nil {
				f.Unusual = true
			}
			*span = line[i:end]
		}
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ',' {
			return f
		}
		i++
	}
}

// keyOf is the text of the quoted key raw; plain is false when it had to
// be unescaped (or could not be).
func keyOf(raw []byte) (key string, plain bool) {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	if json.Unmarshal(raw, &key) != nil {
		return "", false
	}
	return key, false
}

// member is where the span of the member named key goes; nil for a
// member Fields does not keep.
func (f *Fields) member(key string) *[]byte {
	switch key {
	case "jsonrpc":
		return &f.Version
	case "id":
		return &f.ID
	case "method":
		return &f.Method
	case "params":
		return &f.Params
	case "result":
		return &f.Result
	case "error":
		return &f.Error
	}
	return nil
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
			i = closeQuote(b, i)
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

// Deeper reports whether the JSON value b nests objects and arrays more
// than max deep (brackets inside strings do not count).
func Deeper(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = closeQuote(b, i)
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// closeQuote returns the index of the quote that ends the JSON string
// whose opening quote is at i in b (len(b) when it has none).
func closeQuote(b []byte, i int) int {
	for i++; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i
}
