package shapes

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The bounds of a shape, stated once.
const (
	// MaxDepth is how many levels of nesting a shape keeps below the
	// value itself; a deeper object or list shows as {...} or [...].
	MaxDepth = 6
	// MaxKeys is how many keys of one object a shape keeps (the first in
	// sorted order); more show as "...".
	MaxKeys = 40
	// MaxKeyLen is how many bytes of a key are kept (cut at a character).
	MaxKeyLen = 48
	// MaxItems is how many items of each list one result adds.
	MaxItems = 32
	// MaxNodes is how many nodes one tool's shape holds; a key that would
	// add more is left out ("...").
	MaxNodes = 400
	// MaxMedia is how many content types one node keeps.
	MaxMedia = 8
	// textSample is how much of a text block is read to tell its kind.
	textSample = 64 << 10
	// maxWork is how many nodes reading one result may make before it
	// stops looking (lists of lists would otherwise multiply MaxItems).
	maxWork = 20000
)

// Kind is a set of JSON value types.
type Kind uint8

// The value types.
const (
	KDict Kind = 1 << iota
	KList
	KStr
	KInt
	KFloat
	KBool
	KNull
)

// kindNames are the types as the rendering names them, in its order.
var kindNames = []struct {
	k    Kind
	name string
}{{KInt, "int"}, {KFloat, "float"}, {KBool, "bool"}, {KNull, "None"}}

// TextKind is a set of the kinds of text a text block was.
type TextKind uint8

// The kinds of text.
const (
	TJSON TextKind = 1 << iota
	TCSV
	TLines
	TText
	TEmpty
)

// Node is the shape of the values merged at one place of a result.
type Node struct {
	N      int              `json:"n"`           // values merged here
	Kinds  Kind             `json:"k,omitempty"` // their types
	Text   TextKind         `json:"t,omitempty"` // for a text block: its kinds
	JSON   *Node            `json:"j,omitempty"` // the shape of text that parses as JSON
	Cols   int              `json:"c,omitempty"` // CSV-like text: its columns (the most seen)
	Media  []string         `json:"m,omitempty"` // content blocks that are not text, by content type
	Dicts  int              `json:"d,omitempty"` // objects merged here
	Fields map[string]*Node `json:"f,omitempty"` // their keys
	Items  *Node            `json:"i,omitempty"` // list items
	Cut    bool             `json:"x,omitempty"` // keys or depth were left out here
}

// Mask is what a key becomes before it is kept (the gate's masking).
type Mask func(string) string

// result is what Observe reads of a CallToolResult (isError is its
// caller's to know).
type result struct {
	Content    []block         `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
}

type block struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mimeType"`
	Resource *struct {
		MimeType string `json:"mimeType"`
	} `json:"resource"`
}

// Observe is the shape of one CallToolResult (as JSON) that is not an
// error (isError, which its caller decided); ok is false when raw is not
// a result.
func Observe(raw json.RawMessage, mask Mask) (n *Node, ok bool) {
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, false
	}
	b := &builder{mask: mask}
	if len(r.Structured) > 0 && string(r.Structured) != "null" {
		v, err := decode(r.Structured)
		if err != nil {
			return nil, false
		}
		return b.value(v, 0), true
	}
	if len(r.Content) == 1 && r.Content[0].Type == "text" {
		return b.text(r.Content[0].Text), true
	}
	n = &Node{N: 1, Kinds: KList}
	for i, c := range r.Content {
		if i == MaxItems {
			n.Cut = true
			break
		}
		n.Items = merge(n.Items, b.block(c), &budget{left: MaxNodes})
	}
	return n, true
}

// decode parses JSON with its numbers kept as written (int or float).
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// builder makes the shape of one result, within maxWork nodes.
type builder struct {
	mask  Mask
	nodes int
}

func (b *builder) node(k Kind) *Node {
	b.nodes++
	return &Node{N: 1, Kinds: k}
}

// value is the shape of a decoded JSON value at depth.
func (b *builder) value(v any, depth int) *Node {
	switch x := v.(type) {
	case map[string]any:
		n := b.node(KDict)
		n.Dicts = 1
		b.fields(n, x, depth)
		return n
	case []any:
		n := b.node(KList)
		if depth >= MaxDepth {
			n.Cut = len(x) > 0
			return n
		}
		bud := &budget{left: MaxNodes}
		for i, e := range x {
			if i == MaxItems || b.nodes >= maxWork {
				n.Cut = n.Cut || b.nodes >= maxWork
				break
			}
			n.Items = merge(n.Items, b.value(e, depth+1), bud)
		}
		return n
	case string:
		return b.node(KStr)
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return b.node(KFloat)
		}
		return b.node(KInt)
	case bool:
		return b.node(KBool)
	}
	return b.node(KNull)
}

// fields adds the keys of an object to n: at most MaxKeys, the first in
// sorted order, masked and cut, while the builder has nodes left.
func (b *builder) fields(n *Node, obj map[string]any, depth int) {
	if len(obj) == 0 {
		return
	}
	if depth >= MaxDepth {
		n.Cut = true
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > MaxKeys {
		keys, n.Cut = keys[:MaxKeys], true
	}
	n.Fields = make(map[string]*Node, len(keys))
	for _, k := range keys {
		if b.nodes >= maxWork {
			n.Cut = true
			return
		}
		key := b.key(k)
		if old, dup := n.Fields[key]; dup { // two keys masked alike
			n.Fields[key] = merge(old, b.value(obj[k], depth+1), &budget{left: MaxNodes})
			continue
		}
		n.Fields[key] = b.value(obj[k], depth+1)
	}
}

// key is a key as kept: masked, then cut to MaxKeyLen bytes.
func (b *builder) key(k string) string {
	if b.mask != nil {
		k = b.mask(k)
	}
	if !utf8.ValidString(k) {
		k = strings.ToValidUTF8(k, "\uFFFD")
	}
	if len(k) > MaxKeyLen {
		cut := MaxKeyLen
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		k = k[:cut] + "…"
	}
	return k
}

// block is the shape of one content block of a result with several.
func (b *builder) block(c block) *Node {
	switch c.Type {
	case "text":
		return b.text(c.Text)
	case "image", "audio":
		return b.media(strings.ToUpper(c.Type[:1])+c.Type[1:], c.MimeType)
	case "resource":
		mime := ""
		if c.Resource != nil {
			mime = c.Resource.MimeType
		}
		return b.media("resource", mime)
	case "resource_link":
		return b.media("resource_link", "")
	}
	return b.node(KDict)
}

// mimeRE is a content type as a shape shows it; any other is "?".
var mimeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+-]{0,30}/[A-Za-z0-9][A-Za-z0-9.+-]{0,30}$`)

func (b *builder) media(what, mime string) *Node {
	n := b.node(0)
	if mime != "" {
		if !mimeRE.MatchString(mime) {
			mime = "?"
		}
		what += "(" + strings.ToLower(mime) + ")"
	}
	n.Media = []string{what}
	return n
}

// text is the shape of a text block: str, and what kind of text.
func (b *builder) text(s string) *Node {
	n := b.node(KStr)
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		n.Text = TEmpty
	case trimmed[0] == '{' || trimmed[0] == '[' || trimmed[0] == '"':
		if v, err := decode([]byte(trimmed)); err == nil {
			n.Text, n.JSON = TJSON, b.value(v, 0)
			return n
		}
		n.Text = kindOf(s, &n.Cols)
	default:
		if v, err := decode([]byte(trimmed)); err == nil && isScalarJSON(trimmed) {
			n.Text, n.JSON = TJSON, b.value(v, 0)
			return n
		}
		n.Text = kindOf(s, &n.Cols)
	}
	return n
}

// isScalarJSON reports whether s is a number, true, false or null: text
// such as "42" is JSON, a word is not.
func isScalarJSON(s string) bool {
	return s == "true" || s == "false" || s == "null" || (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

// kindOf tells what kind of text s is, looking at its first textSample
// bytes: CSV-like (at least two lines, the first five all split into the
// same number, two or more, of comma- or tab-separated fields), lines
// (two or more lines, none longer than 200 bytes), else text. Only the
// number of columns is kept: the first line of CSV-like text need not be
// a header, and if it is data, its names would be values.
func kindOf(s string, cols *int) TextKind {
	if len(s) > textSample {
		s = s[:textSample]
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
	if len(lines) < 2 {
		return TText
	}
	for _, sep := range []string{"\t", ","} {
		if n := columns(lines, sep); n >= 2 {
			*cols = n
			return TCSV
		}
	}
	for _, l := range lines[:len(lines)-1] { // the last may be cut by the sample
		if len(l) > 200 {
			return TText
		}
	}
	return TLines
}

// columns is how many fields sep splits each of the first five lines
// into, when that is the same for all of them; else 0.
func columns(lines []string, sep string) int {
	n := strings.Count(lines[0], sep) + 1
	for _, l := range lines[1:min(len(lines), 5)] {
		if strings.Count(l, sep)+1 != n {
			return 0
		}
	}
	if n < 2 {
		return 0
	}
	return n
}
