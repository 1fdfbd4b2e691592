package shapes

import (
	"regexp"
	"strconv"
	"strings"
)

// The longest renderings, in bytes: the form help() shows and the one
// line of a search hit.
const (
	MaxText = 2000
	MaxLine = 200
)

// Render is the shape in a compact Python-like notation, at most MaxText
// bytes: {id: int, title: str, tags: [str], owner?: {login: str}}. A key
// some objects lacked ends in "?", types seen at one place are joined by
// "|", a text block is str(...) with its kinds (JSON and the shape it
// parses to, CSV-like with its columns, lines, text, empty), other
// content blocks are named by their content type (Image(image/png)), and
// "..." marks what the bounds left out.
func (n *Node) Render() string { return n.render(MaxText) }

// Line is Render cut to MaxLine bytes, for one line of a search hit.
func (n *Node) Line() string { return n.render(MaxLine) }

func (n *Node) render(limit int) string {
	var w writer
	w.limit = limit
	w.node(n)
	return w.String()
}

// writer writes a rendering and stops at its limit, ending it with "…".
type writer struct {
	strings.Builder
	limit int
	full  bool
}

func (w *writer) put(s string) {
	if w.full {
		return
	}
	if w.Len()+len(s) > w.limit-len("…") {
		cut := max(w.limit-len("…")-w.Len(), 0)
		for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
			cut--
		}
		w.WriteString(s[:cut] + "…")
		w.full = true
		return
	}
	w.WriteString(s)
}

func (w *writer) node(n *Node) {
	if n == nil {
		w.put("...")
		return
	}
	first := true
	alt := func() {
		if !first {
			w.put("|")
		}
		first = false
	}
	if n.Kinds&KDict != 0 {
		alt()
		w.dict(n)
	}
	if n.Kinds&KList != 0 {
		alt()
		w.list(n)
	}
	if n.Kinds&KStr != 0 {
		alt()
		w.str(n)
	}
	for _, k := range kindNames {
		if n.Kinds&k.k != 0 {
			alt()
			w.put(k.name)
		}
	}
	for _, m := range n.Media {
		alt()
		w.put(m)
	}
	if first {
		w.put("...")
	}
}

func (w *writer) dict(n *Node) {
	w.put("{")
	for i, k := range sortedKeys(n.Fields) {
		if i > 0 {
			w.put(", ")
		}
		f := n.Fields[k]
		w.put(quoteKey(k))
		if f.N < n.Dicts {
			w.put("?")
		}
		w.put(": ")
		w.node(f)
	}
	if n.Cut {
		if len(n.Fields) > 0 {
			w.put(", ")
		}
		w.put("...")
	}
	w.put("}")
}

func (w *writer) list(n *Node) {
	w.put("[")
	switch {
	case n.Items != nil:
		w.node(n.Items)
	case n.Cut:
		w.put("...")
	}
	w.put("]")
}

// str writes a str, with the kinds of text a text block was.
func (w *writer) str(n *Node) {
	w.put("str")
	if n.Text == 0 {
		return
	}
	w.put("(")
	sep := ""
	if n.Text&TJSON != 0 {
		w.put("JSON ")
		w.node(n.JSON)
		sep = " | "
	}
	for _, t := range []struct {
		k    TextKind
		name string
	}{{TCSV, "CSV-like"}, {TLines, "lines"}, {TText, "text"}, {TEmpty, "empty"}} {
		if n.Text&t.k == 0 {
			continue
		}
		w.put(sep + t.name)
		if t.k == TCSV && n.Cols > 0 {
			w.put(", " + strconv.Itoa(n.Cols) + " columns")
		}
		sep = " | "
	}
	w.put(")")
}

// plainKey is a key shown as it is; any other is quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.$@-]*$|^<[a-z_]+>$`)

// quoteKey is a key as the rendering shows it: as it is when it is a
// plain name (or a mask, <email>), else quoted with Go's escapes, so that
// control characters, escape sequences and the notation's own characters
// in it show as text.
func quoteKey(k string) string {
	if plainKey.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}
