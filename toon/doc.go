// Package toon encodes JSON-model data as TOON (Token-Oriented Object
// Notation), a compact, line-oriented, indentation-based text format aimed
// at LLM prompts. It implements the encoder side of TOON specification v3.3
// and passes every official encode fixture (testdata/toon/encode).
//
// Two entry points are provided:
//
//   - [EncodeJSON] takes JSON text and preserves object key order exactly as
//     it appears in the input. This is the entry point for tool results and
//     any other data that already exists as JSON.
//   - [Encode] takes an arbitrary Go value.
//
// Output uses LF line endings, has no trailing spaces and no trailing
// newline. Uniform arrays of objects with primitive values become tables:
//
//	users[2]{id,name,active}:
//	  1,Ada,true
//	  2,Bob,false
//
// # Options
//
// [WithIndent] (spaces per level, default 2), [WithDelimiter] (',' default,
// '\t' or '|'), [WithKeyFolding] ("off" default, or "safe", which collapses
// chains of single-key objects into dotted keys such as a.b.c: 1) and
// [WithFlattenDepth] (maximum number of segments folded into one key;
// default unlimited).
//
// # Numbers
//
// Numbers are emitted in the canonical form of spec §2: no exponent for
// 1e-6 <= |n| < 1e21, no trailing fractional zeros, -0 becomes 0, and
// integral values print without a fraction (1.0 becomes 1). Outside that
// range exponent notation with a lowercase e and explicit sign is used
// (1e+21, 1.5e-7), matching JavaScript's Number#toString.
//
// Numbers read by EncodeJSON (and json.Number values) are canonicalised from
// their decimal text, never via float64, so no precision is lost: an integer
// literal is emitted with all its digits (e.g. 123456789012345678901234), a
// literal such as 0.10000000000000000000001 keeps all its digits, and 1e400
// becomes 1e+400. float32/float64 values use the shortest representation
// that round-trips. NaN and ±Inf become null.
//
// # Go value normalisation (Encode)
//
//   - nil, nil pointers, nil slices and nil maps become null.
//   - Strings, booleans, all integer and float kinds map to the obvious
//     primitives; invalid UTF-8 is replaced with U+FFFD.
//   - Maps with string-kind keys become objects with keys sorted (Go maps
//     have no order); other maps follow encoding/json key rules.
//   - Slices and arrays become arrays; []byte becomes a base64 string.
//   - Structs, and values implementing json.Marshaler (time.Time,
//     json.RawMessage, *big.Int, ...), are converted through encoding/json,
//     so struct tags, omitempty and field order are honoured and key order
//     of the produced JSON is kept. encoding.TextMarshaler values become
//     strings.
//   - Channels, functions, complex numbers and unsafe pointers are rejected
//     with an error, as is nesting deeper than 1000 levels (cycles).
//
// # String quoting
//
// Strings are quoted exactly when spec §7.2 requires it (empty; looks like
// a number, true, false or null; starts with '-'; contains ':', '"', '\',
// brackets, braces, control characters or the delimiter) and, in addition,
// when they start or end with any Unicode whitespace character or U+FEFF,
// so that no decoder's trimming can alter them. A leading '+' on an
// otherwise numeric string also forces quotes.
package toon
