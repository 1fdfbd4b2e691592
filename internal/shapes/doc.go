// Package shapes records what the tools of upstream servers return: the
// shape of each result, never a value, merged over calls, so that the
// model sees how to read a tool's answer before its first attempt
// (help(mcp_x.tool) and search hits show it).
//
// A result's shape is the shape of the value a call returns in Python
// (pyruntime/mcp/_results.py convert): its structuredContent; else its
// single text block, with the kind of text it is (JSON, with the shape of
// what it parses to; CSV-like, with its number of columns; lines; empty;
// text); else the list of its content blocks (text, or the content type
// of an image, audio or resource). For JSON the shape holds the object
// keys, the value types and the shape of list items. Merged over calls,
// a key that some objects lack is optional ("owner?") and a value seen
// as int and as null is "int|None". Results with isError (as the caller
// decided: the gate's audit reads it) are counted apart and never merged.
//
// The shape is bounded, whatever the upstream sends (the bounds are the
// constants of shape.go, render.go and store.go, each stated once): its
// depth, the keys kept per object, a key's length, the list items looked
// at, the nodes of one tool's shape and the work of reading one result,
// the text looked at to tell its kind, the rendered text, the size of a
// result read at all, the tools and the bytes of one server's file. Keys are data an
// upstream chose: they are masked with the gate's redaction (the caller
// passes a mask; a key holding a redacted value keeps only the token's
// kind, "<email>") and escaped when rendered (a key that is not a plain
// name is quoted, its control characters escaped).
//
// A [Store] keeps the shapes under the state directory (statedir.Shapes,
// one file per server, named by a hash of the server's name), for each
// principal apart (statedir.Dir.Of; the local user's in the state
// directory's own place), whatever the server; each tool's
// shape is kept with a hash of the tool's definition as listed (name,
// description, inputSchema, outputSchema) and dropped when that changes.
// A result observed is merged and its file written by the store's writer
// (one goroutine), not on the path of the call that observed it: a shape
// asked for shows every result observed before; results wait for the
// writer within a budget of bytes (past it the caller merges its own);
// a file is written when its shape moved or at 1, 2, 4, 8... results,
// and every file behind its book at [Store.Close].
package shapes
