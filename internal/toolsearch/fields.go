package toolsearch

import "strings"

// field is one part of a Doc that the lexical ranker weighs on its own.
type field int

const (
	fieldName        field = iota // the tool's name, split into words
	fieldTitle                    // its title
	fieldParamNames               // its parameters' names
	fieldParamText                // their descriptions and enum values
	fieldDescription              // its description
	fieldServer                   // its server's name and description
	numFields
)

// Weights weigh each field of a Doc in BM25F's sense: a word in a field of
// weight 3 counts as three in a field of weight 1, before saturation.
type Weights struct {
	Name, Title, ParamNames, ParamText, Description, Server float64
}

func (w Weights) of(f field) float64 {
	return [numFields]float64{w.Name, w.Title, w.ParamNames, w.ParamText, w.Description, w.Server}[f]
}

// Analysed is a Doc split into the index terms of each field, by the
// Searcher that made it (Searcher.Analyse). It is immutable; a caller
// keeps it as long as its tool is listed unchanged, so that a catalogue's
// index is rebuilt from its parts without reading them again.
type Analysed struct {
	Doc    Doc
	hash   [32]byte
	fields [numFields][]string // index terms, in order, with repeats
	words  []wordTerm          // each distinct word with its term, for typo and prefix matches
}

// wordTerm is a word as written and the index term it gives.
type wordTerm struct{ word, term string }

// Analyse splits d into the index terms of each field.
func (s *Searcher) Analyse(d Doc) *Analysed {
	a := &Analysed{Doc: d, hash: d.Hash()}
	seen := map[string]bool{}
	add := func(f field, text string) {
		eachWord(text, func(w string) bool {
			t := s.text.term(w)
			if t == "" {
				return true
			}
			a.fields[f] = append(a.fields[f], t)
			if !seen[w] {
				seen[w] = true
				a.words = append(a.words, wordTerm{w, t})
			}
			return true
		})
	}
	add(fieldName, d.Name)
	add(fieldTitle, d.Title)
	add(fieldServer, d.Server+" "+d.ServerDescription)
	add(fieldDescription, d.Description)
	if s.opts.Ablate.Params {
		return a
	}
	for _, p := range d.Params {
		add(fieldParamNames, p.Name)
		add(fieldParamText, p.Description)
		add(fieldParamText, strings.Join(p.Enum, " "))
	}
	return a
}
