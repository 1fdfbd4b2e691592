package toon

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The normalised JSON data model the encoder works on:
//
//	nil | bool | string | number | object | []any

type member struct {
	key string
	val any
}

// object is a JSON object with its key order preserved. Keys are unique.
type object []member

// maxDepth bounds nesting when normalising Go values (catches cycles).
const maxDepth = 1000

// decodeJSON decodes one JSON value, preserving object key order. Numbers
// are canonicalised from their text. Duplicate keys keep the position of
// the first occurrence and the value of the last (like JSON.parse).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("toon: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("trailing data after top-level value")
		}
		return nil, fmt.Errorf("toon: invalid JSON: %w", err)
	}
	return v, nil
}

func readValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := object{}
			var index map[string]int
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("unexpected %v in object", kt)
				}
				val, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				obj, index = obj.set(key, val, index)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				val, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, val)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return jsonNumber(string(t))
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// set appends key or, if present, replaces its value in place. index is a
// lazily built key index for large objects.
func (o object) set(key string, val any, index map[string]int) (object, map[string]int) {
	if index == nil && len(o) < 16 {
		for i := range o {
			if o[i].key == key {
				o[i].val = val
				return o, nil
			}
		}
		return append(o, member{key, val}), nil
	}
	if index == nil {
		index = make(map[string]int, 2*len(o))
		for i, m := range o {
			index[m.key] = i
		}
	}
	if i, ok := index[key]; ok {
		o[i].val = val
		return o, index
	}
	index[key] = len(o)
	return append(o, member{key, val}), index
}

// normalize converts a Go value to the JSON data model.
func normalize(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("toon: value nested too deeply (cycle?)")
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return validString(x), nil
	case bool:
		return x, nil
	case number:
		return x, nil
	case json.Number:
		return jsonNumber(string(x))
	case float64:
		return floatNumber(x, 64), nil
	case float32:
		return floatNumber(float64(x), 32), nil
	case int:
		return number(strconv.Itoa(x)), nil
	case int64:
		return number(strconv.FormatInt(x, 10)), nil
	case int32:
		return number(strconv.FormatInt(int64(x), 10)), nil
	case uint64:
		return number(strconv.FormatUint(x, 10)), nil
	case map[string]any:
		if x == nil {
			return nil, nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		obj := make(object, len(keys))
		for i, k := range keys {
			val, err := normalize(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			obj[i] = member{validString(k), val}
		}
		return obj, nil
	case []any:
		if x == nil {
			return nil, nil
		}
		arr := make([]any, len(x))
		for i, e := range x {
			val, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			arr[i] = val
		}
		return arr, nil
	case json.Marshaler:
		return viaJSON(v)
	case encoding.TextMarshaler:
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil, nil
		}
		text, err := x.MarshalText()
		if err != nil {
			return nil, fmt.Errorf("toon: %w", err)
		}
		return validString(string(text)), nil
	}

	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return normalize(rv.Elem().Interface(), depth+1)
	case reflect.String:
		return validString(rv.String()), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return number(strconv.FormatUint(rv.Uint(), 10)), nil
	case reflect.Float32:
		return floatNumber(rv.Float(), 32), nil
	case reflect.Float64:
		return floatNumber(rv.Float(), 64), nil
	case reflect.Slice:
		if rv.IsNil() {
			return nil, nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 && !implementsMarshaler(rv.Type().Elem()) {
			return base64.StdEncoding.EncodeToString(rv.Bytes()), nil
		}
		fallthrough
	case reflect.Array:
		arr := make([]any, rv.Len())
		for i := range arr {
			val, err := normalize(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			arr[i] = val
		}
		return arr, nil
	case reflect.Map:
		if rv.IsNil() {
			return nil, nil
		}
		if rv.Type().Key().Kind() != reflect.String {
			return viaJSON(v) // integer / TextMarshaler keys: encoding/json rules
		}
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		obj := make(object, len(keys))
		for i, k := range keys {
			val, err := normalize(rv.MapIndex(k).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			obj[i] = member{validString(k.String()), val}
		}
		return obj, nil
	case reflect.Struct:
		return viaJSON(v)
	}
	return nil, fmt.Errorf("toon: unsupported type %s", rv.Type())
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func implementsMarshaler(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)
}

// viaJSON converts v with encoding/json and decodes the result in order.
func viaJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("toon: %w", err)
	}
	return decodeJSON(data)
}

func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
