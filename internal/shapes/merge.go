package shapes

import (
	"slices"
)

// budget is how many more nodes a shape may gain; changed records
// whether a merge changed what the shape renders to.
type budget struct {
	left    int
	changed bool
}

// take reports whether one more node fits, and counts it.
func (b *budget) take() bool {
	if b.left <= 0 {
		return false
	}
	b.left--
	return true
}

// Merge is the shape of the values of a and b together; a is changed (nil
// is no value yet). The shape keeps at most MaxNodes nodes.
func Merge(a, b *Node) *Node {
	n, _ := mergeChanged(a, b)
	return n
}

// mergeChanged is Merge, and whether the rendering of the shape changed
// (so that it need not be rendered again to know).
func mergeChanged(a, b *Node) (*Node, bool) {
	bud := &budget{left: MaxNodes - a.size()}
	n := merge(a, b, bud)
	return n, bud.changed
}

// merge merges b into a within bud.
func merge(a, b *Node, bud *budget) *Node {
	switch {
	case b == nil:
		return a
	case a == nil:
		if !bud.take() {
			return nil
		}
		bud.changed = true
		return prune(b, bud)
	}
	if b.Kinds&^a.Kinds != 0 || b.Text&^a.Text != 0 || b.Cols > a.Cols || b.Cut && !a.Cut {
		bud.changed = true
	}
	bud.changed = bud.changed || optionalityMoves(a, b)
	a.N += b.N
	a.Kinds |= b.Kinds
	a.Text |= b.Text
	a.Cols = max(a.Cols, b.Cols)
	a.Dicts += b.Dicts
	a.Cut = a.Cut || b.Cut
	for _, m := range b.Media {
		if !slices.Contains(a.Media, m) {
			if len(a.Media) == MaxMedia {
				a.Cut = true
				break
			}
			a.Media = append(a.Media, m)
			slices.Sort(a.Media)
			bud.changed = true
		}
	}
	a.JSON = mergeChild(a, a.JSON, b.JSON, bud)
	a.Items = mergeChild(a, a.Items, b.Items, bud)
	for _, k := range sortedKeys(b.Fields) {
		if old, ok := a.Fields[k]; ok {
			a.Fields[k] = merge(old, b.Fields[k], bud)
			continue
		}
		if len(a.Fields) >= MaxKeys {
			bud.changed = bud.changed || !a.Cut
			a.Cut = true
			continue
		}
		if n := merge(nil, b.Fields[k], bud); n != nil {
			if a.Fields == nil {
				a.Fields = map[string]*Node{}
			}
			a.Fields[k] = n
		} else {
			a.Cut = true
		}
	}
	return a
}

// optionalityMoves reports whether merging b into a makes a key of a
// optional ("key?") or required that was not: a key is optional when
// fewer values hold it than objects were merged. (Keys new to a change
// the shape anyway.)
func optionalityMoves(a, b *Node) bool {
	for k, f := range a.Fields {
		n := f.N
		if g := b.Fields[k]; g != nil {
			n += g.N
		}
		if (f.N < a.Dicts) != (n < a.Dicts+b.Dicts) {
			return true
		}
	}
	return false
}

// mergeChild merges a child of parent, marking parent cut when the child
// did not fit.
func mergeChild(parent, a, b *Node, bud *budget) *Node {
	n := merge(a, b, bud)
	if n == nil && b != nil {
		parent.Cut = true
	}
	return n
}

// prune is b (whose own node is counted) with what fits of its children.
func prune(b *Node, bud *budget) *Node {
	if b.JSON != nil {
		b.JSON = mergeChild(b, nil, b.JSON, bud)
	}
	if b.Items != nil {
		b.Items = mergeChild(b, nil, b.Items, bud)
	}
	for _, k := range sortedKeys(b.Fields) {
		if !bud.take() {
			delete(b.Fields, k)
			b.Cut = true
			continue
		}
		bud.changed = true
		b.Fields[k] = prune(b.Fields[k], bud)
	}
	return b
}

// size is how many nodes n holds.
func (n *Node) size() int {
	if n == nil {
		return 0
	}
	s := 1 + n.JSON.size() + n.Items.size()
	for _, f := range n.Fields {
		s += f.size()
	}
	return s
}

func sortedKeys(m map[string]*Node) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
