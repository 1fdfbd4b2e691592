package toon

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Encode encodes a Go value as TOON. See the package documentation for how
// Go values map to the JSON data model; in particular map keys are sorted,
// and structs go through encoding/json.
func Encode(v any, opts ...Option) (string, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return "", err
	}
	val, err := normalize(v, 0)
	if err != nil {
		return "", err
	}
	return encodeValue(val, cfg, 0), nil
}

// EncodeJSON decodes one JSON value from data, preserving object key order
// and number text, and encodes it as TOON. Invalid JSON is an error.
// Duplicate object keys keep their first position and their last value.
func EncodeJSON(data []byte, opts ...Option) (string, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return "", err
	}
	val, err := decodeJSON(data)
	if err != nil {
		return "", err
	}
	return encodeValue(val, cfg, len(data)), nil
}

type encoder struct {
	config
	buf     []byte
	started bool // at least one line written
	// item is set while writing the first line of a list-item object: that
	// line is written at depth-1 behind "- " instead of at depth.
	item bool
	// rootDotted holds the root object's keys containing '.', for the
	// key folding collision check against absolute paths.
	rootDotted map[string]bool
}

func encodeValue(v any, cfg config, sizeHint int) string {
	e := &encoder{config: cfg}
	if sizeHint > 0 {
		e.buf = make([]byte, 0, sizeHint)
	}
	switch x := v.(type) {
	case object:
		if e.fold {
			for _, m := range x {
				if strings.IndexByte(m.key, '.') >= 0 {
					if e.rootDotted == nil {
						e.rootDotted = map[string]bool{}
					}
					e.rootDotted[m.key] = true
				}
			}
		}
		e.object(x, 0, "", true, e.flatten)
	case []any:
		e.array("", false, x, 0)
	default:
		e.primitive(v)
	}
	return string(e.buf)
}

// line starts a new output line at depth.
func (e *encoder) line(depth int) {
	if e.started {
		e.buf = append(e.buf, '\n')
	}
	e.started = true
	if e.item {
		e.item = false
		e.indent(depth - 1)
		e.buf = append(e.buf, '-', ' ')
		return
	}
	e.indent(depth)
}

// listItem starts a new "- " line at depth.
func (e *encoder) listItem(depth int) {
	e.line(depth)
	e.buf = append(e.buf, '-', ' ')
}

func (e *encoder) indent(depth int) {
	for i := depth * e.config.indent; i > 0; i-- {
		e.buf = append(e.buf, ' ')
	}
}

// object writes the fields of o at depth. path is the dotted path of o
// from the root (anchored reports whether it is meaningful, i.e. o is not
// inside an array) and flatten the remaining key folding budget.
func (e *encoder) object(o object, depth int, path string, anchored bool, flatten int) {
	for _, m := range o {
		e.field(m.key, m.val, o, depth, path, anchored, flatten)
	}
}

func (e *encoder) field(key string, val any, siblings object, depth int, path string, anchored bool, flatten int) {
	if e.fold {
		if obj, ok := val.(object); ok {
			if folded, rest, n, ok := e.tryFold(key, obj, siblings, path, anchored, flatten); ok {
				if tail, ok := rest.(object); ok && len(tail) > 0 {
					e.line(depth)
					e.key(folded)
					e.buf = append(e.buf, ':')
					e.object(tail, depth+1, joinPath(path, folded), anchored, flatten-n)
					return
				}
				key, val = folded, rest
			}
		}
	}
	switch x := val.(type) {
	case object:
		e.line(depth)
		e.key(key)
		e.buf = append(e.buf, ':')
		if len(x) > 0 {
			e.object(x, depth+1, joinPath(path, key), anchored, flatten)
		}
	case []any:
		e.array(key, true, x, depth)
	default:
		e.line(depth)
		e.key(key)
		e.buf = append(e.buf, ':', ' ')
		e.primitive(val)
	}
}

// tryFold implements safe key folding (spec §13.4). It returns the dotted
// key, the value at the end of the folded chain, and the number of folded
// segments.
func (e *encoder) tryFold(key string, val object, siblings object, path string, anchored bool, flatten int) (string, any, int, bool) {
	if flatten < 2 || len(val) != 1 || !isIdentifier(key) {
		return "", nil, 0, false
	}
	segs := []string{key}
	var cur any = val
	for len(segs) < flatten {
		o, ok := cur.(object)
		if !ok || len(o) != 1 {
			break
		}
		if !isIdentifier(o[0].key) {
			return "", nil, 0, false
		}
		segs = append(segs, o[0].key)
		cur = o[0].val
	}
	folded := strings.Join(segs, ".")
	for _, m := range siblings {
		if m.key == folded {
			return "", nil, 0, false
		}
	}
	if anchored && e.rootDotted[joinPath(path, folded)] {
		return "", nil, 0, false
	}
	return folded, cur, len(segs), true
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// array writes an array field (hasKey) or root array at depth.
func (e *encoder) array(key string, hasKey bool, arr []any, depth int) {
	e.line(depth)
	if len(arr) == 0 {
		if hasKey {
			e.key(key)
			e.buf = append(e.buf, ':', ' ', '[', ']')
		} else {
			e.buf = append(e.buf, '[', ']')
		}
		return
	}
	if hasKey {
		e.key(key)
	}
	if allPrimitive(arr) {
		e.inline(arr)
		return
	}
	if fields := tabularFields(arr); fields != nil {
		e.header(len(arr), fields)
		e.rows(arr, fields, depth+1)
		return
	}
	e.header(len(arr), nil)
	for _, it := range arr {
		e.listValue(it, depth+1)
	}
}

// inline writes "[N]: v1,v2,..." (or "[0]:" when empty) after the key.
func (e *encoder) inline(arr []any) {
	e.header(len(arr), nil)
	for i, v := range arr {
		if i == 0 {
			e.buf = append(e.buf, ' ')
		} else {
			e.buf = append(e.buf, e.delim)
		}
		e.primitive(v)
	}
}

// header writes "[N<delim?>]{fields}:".
func (e *encoder) header(n int, fields object) {
	e.buf = append(e.buf, '[')
	e.buf = strconv.AppendInt(e.buf, int64(n), 10)
	if e.delim != ',' {
		e.buf = append(e.buf, e.delim)
	}
	e.buf = append(e.buf, ']')
	if fields != nil {
		e.buf = append(e.buf, '{')
		for i, f := range fields {
			if i > 0 {
				e.buf = append(e.buf, e.delim)
			}
			e.key(f.key)
		}
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, ':')
}

// rows writes tabular rows; fields is the first row (its key order is the
// column order). tabularFields guaranteed all rows have the same key set.
func (e *encoder) rows(arr []any, fields object, depth int) {
	for _, it := range arr {
		row := it.(object)
		e.line(depth)
		for i, f := range fields {
			if i > 0 {
				e.buf = append(e.buf, e.delim)
			}
			if row[i].key == f.key {
				e.primitive(row[i].val)
			} else {
				e.primitive(row.get(f.key))
			}
		}
	}
}

func (o object) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// tabularFields returns the first element if arr qualifies for tabular
// form (spec §9.3): all elements non-empty objects with the same key set
// and only primitive values.
func tabularFields(arr []any) object {
	first, ok := arr[0].(object)
	if !ok || len(first) == 0 {
		return nil
	}
	var index map[string]bool
	for _, it := range arr {
		row, ok := it.(object)
		if !ok || len(row) != len(first) {
			return nil
		}
		for j, m := range row {
			if !isPrimitive(m.val) {
				return nil
			}
			if m.key == first[j].key {
				continue
			}
			if index == nil {
				index = make(map[string]bool, len(first))
				for _, f := range first {
					index[f.key] = true
				}
			}
			// Keys are unique within an object, so equal length plus
			// membership of every key means equal key sets.
			if !index[m.key] {
				return nil
			}
		}
	}
	return first
}

// listValue writes v as a "- " list item at depth.
func (e *encoder) listValue(v any, depth int) {
	switch x := v.(type) {
	case object:
		if len(x) == 0 {
			e.line(depth)
			e.buf = append(e.buf, '-')
			return
		}
		// Fields go at depth+1; the first one is pulled up onto the
		// hyphen line. A tabular first field thus gets its rows at
		// depth+2 and the remaining fields at depth+1 (spec §10).
		e.item = true
		e.object(x, depth+1, "", false, e.flatten)
	case []any:
		e.listItem(depth)
		if allPrimitive(x) {
			e.inline(x)
			return
		}
		// Tabular form is not available here (spec §9.4).
		e.header(len(x), nil)
		for _, it := range x {
			e.listValue(it, depth+1)
		}
	default:
		e.listItem(depth)
		e.primitive(v)
	}
}

func isPrimitive(v any) bool {
	switch v.(type) {
	case object, []any:
		return false
	}
	return true
}

func allPrimitive(arr []any) bool {
	for _, v := range arr {
		if !isPrimitive(v) {
			return false
		}
	}
	return true
}

func (e *encoder) primitive(v any) {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case number:
		e.buf = append(e.buf, x...)
	case string:
		if needsQuotes(x, e.delim) {
			e.quoted(x)
		} else {
			e.buf = append(e.buf, x...)
		}
	}
}

// key writes an object key or field name (spec §7.3).
func (e *encoder) key(k string) {
	if isUnquotedKey(k) {
		e.buf = append(e.buf, k...)
	} else {
		e.quoted(k)
	}
}

const hexDigits = "0123456789abcdef"

// quoted writes s as a quoted string with the escapes of spec §7.1.
func (e *encoder) quoted(s string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		e.buf = append(e.buf, s[start:i]...)
		switch c {
		case '"', '\\':
			e.buf = append(e.buf, '\\', c)
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		default:
			e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}

// needsQuotes reports whether string value s must be quoted (spec §7.2).
func needsQuotes(s string, delim byte) bool {
	if s == "" || s == "true" || s == "false" || s == "null" || s[0] == '-' {
		return true
	}
	if r, _ := utf8.DecodeRuneInString(s); isSpace(r) {
		return true
	}
	if r, _ := utf8.DecodeLastRuneInString(s); isSpace(r) {
		return true
	}
	if isNumericLike(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ':', '"', '\\', '[', ']', '{', '}', delim:
			return true
		default:
			if c < 0x20 {
				return true
			}
		}
	}
	return false
}

func isSpace(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }

// isNumericLike matches /^[+-]?\d+(\.\d+)?(e[+-]?\d+)?$/i.
func isNumericLike(s string) bool {
	i := 0
	if s[0] == '-' || s[0] == '+' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i > j
	}
	if !digits() {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// isUnquotedKey matches /^[A-Za-z_][A-Za-z0-9_.]*$/.
func isUnquotedKey(k string) bool {
	if k == "" || !isIdentStart(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !isIdentStart(c) && !isDigit(c) && c != '.' {
			return false
		}
	}
	return true
}

// isIdentifier matches IdentifierSegment /^[A-Za-z_][A-Za-z0-9_]*$/.
func isIdentifier(k string) bool {
	if k == "" || !isIdentStart(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !isIdentStart(c) && !isDigit(c) {
			return false
		}
	}
	return true
}

func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
