package toolsearch

import (
	"crypto/sha256"
	"encoding/json"
	"sort"
	"strings"
)

// Doc is what a tool (or resource, template or prompt) is found by.
type Doc struct {
	Server            string // the server's name
	ServerDescription string // the server's own description, if it has one
	Name              string
	Title             string
	Description       string
	Params            []Param
}

// Param is one parameter of a tool's input schema: its name (with its
// parents' for a nested one), description, and the values it allows.
type Param struct {
	Name        string
	Description string
	Enum        []string
}

// Params returns the parameters of an input schema (a JSON Schema
// object, as any value that marshals to JSON): its properties, and theirs
// down to maxParamDepth, with their descriptions and enum values, in a
// stable order. A schema that is not an object has none.
func Params(schema any) []Param {
	if schema == nil {
		return nil
	}
	raw, ok := schema.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(schema); err != nil {
			return nil
		}
	}
	var s jsonSchema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var out []Param
	s.params("", 0, &out)
	return out
}

// maxParamDepth is how deep nested properties are read; maxParams how
// many parameters of one tool are indexed.
const (
	maxParamDepth = 3
	maxParams     = 64
)

// jsonSchema is the part of a JSON Schema that search reads.
type jsonSchema struct {
	Description string                 `json:"description"`
	Enum        []any                  `json:"enum"`
	Properties  map[string]*jsonSchema `json:"properties"`
	Items       *jsonSchema            `json:"items"`
}

func (s *jsonSchema) params(prefix string, depth int, out *[]Param) {
	if s == nil || depth >= maxParamDepth {
		return
	}
	if s.Items != nil {
		s.Items.params(prefix, depth, out)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(*out) >= maxParams {
			return
		}
		p := s.Properties[n]
		if p == nil {
			continue
		}
		param := Param{Name: strings.TrimPrefix(prefix+"."+n, "."), Description: p.Description}
		for _, v := range p.Enum {
			if str, ok := v.(string); ok {
				param.Enum = append(param.Enum, str)
			}
		}
		*out = append(*out, param)
		p.params(param.Name, depth+1, out)
	}
}

// Hash identifies what defines d for search; a tool's vector is cached
// under it.
func (d *Doc) Hash() [32]byte {
	h := sha256.New()
	put := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	put(d.Server)
	put(d.ServerDescription)
	put(d.Name)
	put(d.Title)
	put(d.Description)
	for _, p := range d.Params {
		put(p.Name)
		put(p.Description)
		put(strings.Join(p.Enum, "\x01"))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
