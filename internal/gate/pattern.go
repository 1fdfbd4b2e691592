package gate

import (
	"fmt"
	"path"
	"unicode/utf8"
)

// A pattern names tools, resources or prompts in a server's rules. It is
// matched against the whole name (a tool name, a prompt name, a resource
// URI), case-sensitively, and every character of the name is an ordinary
// character: "/", "." and ":" are not separators.
//
//   - "*" matches any run of characters, none included ("*" matches every
//     name, "fs/*" matches "fs/delete" and "fs/a/b").
//   - "?" matches exactly one character.
//   - "[abc]", "[a-z]" and "[^a-z]" match one character of (or not of) a
//     set, as in path.Match.
//   - "\" makes the next character literal ("\*" matches a star).
//   - Any other character matches itself.
//
// path.Match has the same syntax but stops "*" and "?" at "/": with it,
// "deny": ["*"] let a tool named "fs/delete" through.

// matchPattern reports whether name matches pattern as a whole. A
// malformed pattern matches nothing (CheckPattern finds it first).
func matchPattern(pattern, name string) bool {
	p, n := 0, 0
	star, starN := -1, 0 // the last "*" seen, and where in name it began
	for n < len(name) {
		if p < len(pattern) && pattern[p] == '*' {
			star, starN = p, n
			p++
			continue
		}
		if p < len(pattern) {
			if pw, nw, ok := matchOne(pattern[p:], name[n:]); ok {
				p, n = p+pw, n+nw
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last star take one more character, and try again.
		_, w := utf8.DecodeRuneInString(name[starN:])
		starN += w
		p, n = star+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches the first element of pattern (not "*") against the
// first character of name; it returns the bytes each used.
func matchOne(pattern, name string) (pw, nw int, ok bool) {
	r, nw := utf8.DecodeRuneInString(name)
	switch pattern[0] {
	case '?':
		return 1, nw, true
	case '\\':
		if len(pattern) < 2 {
			return 0, 0, false
		}
		_, lw := utf8.DecodeRuneInString(pattern[1:])
		return 1 + lw, nw, pattern[1:1+lw] == name[:nw]
	case '[':
		end := classEnd(pattern)
		if end < 0 {
			return 0, 0, false
		}
		// path.Match decides a class the same way; one character never
		// meets its "/" rule, which only "*" and "?" follow.
		hit, err := path.Match(pattern[:end], string(r))
		return end, nw, err == nil && hit
	}
	_, lw := utf8.DecodeRuneInString(pattern)
	return lw, nw, pattern[:lw] == name[:nw] // bytes: two invalid ones are not alike
}

// classEnd is the index just past the "]" that closes the class pattern
// begins with, or -1.
func classEnd(pattern string) int {
	for i := 1; i < len(pattern); i++ {
		switch pattern[i] {
		case ']':
			return i + 1
		case '\\':
			i++
		}
	}
	return -1
}

// CheckPattern says what is wrong with a malformed pattern (an unclosed
// "[", a "\" at the end), for configuration checks.
func CheckPattern(p string) error {
	// path.Match's syntax is the same; only its "/" rule differs, and that
	// rule does not make a pattern malformed.
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid pattern: use * for any run of characters and ? for one (such as \"delete_*\")", p)
	}
	return nil
}
