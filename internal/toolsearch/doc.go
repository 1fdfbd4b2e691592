// Package toolsearch ranks the tools (and resources, templates and
// prompts) of many MCP servers for a query in plain words, the way an
// agent asks for one: "delete a calendar event", "who is the current pm of
// india", or a whole pasted task.
//
// Two rankers are fused:
//
//   - Lexical (lexical.go, index.go): BM25F over the fields of each tool
//     (its name split at _ - . and camelCase, its title, its parameters'
//     names and descriptions, its description, its server's name and
//     description), each field weighted and length-normalised on its own,
//     the words of each reduced by a Porter2 stemmer (the pure-Go
//     github.com/kljensen/snowball, MIT) with English stop words left out.
//     A query word counts once, weighted by how rare it is (IDF). A query
//     word that matches no indexed word exactly may still match by a
//     one- or two-letter typo or as a prefix, at a fraction of the weight
//     and never in place of an exact hit.
//   - Semantic (semantic.go): an Embedder turns the query and each tool
//     into vectors, compared by cosine. The tools' vectors are cached by
//     the hash of what defines them, so a catalogue is embedded once.
//
// Their rankings are fused (fuse.go) by a weighted sum of their scores,
// each over the best of its ranking (measured against reciprocal rank
// fusion by the bench's ablation, and better on both sets). The first
// hits are then scored again by soft matching (soft.go): each query word
// matched to the word of the tool closest to it in meaning, by the same
// Embedder. A query is bounded first (query.go): past a budget of words,
// only its head and its tail are read, and the result says so, so that a
// pasted document costs what a short question does.
//
// An Index is built once per catalogue (Searcher.Index) from the
// Analysed form of each tool, which its caller keeps while the tool is
// listed unchanged; the Searcher keeps the indexes of the last few
// catalogues, found again by the identity of their tools.
package toolsearch
