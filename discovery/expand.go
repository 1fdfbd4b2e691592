package discovery

import (
	"slices"
	"strings"
)

// expand replaces ${VAR} and ${VAR:-default} in s with values from lookup.
// A variable that is set, even to the empty string, gives its value; one that
// is unset gives its default, and one that is unset without a default is
// added to missing (once per name) and left as written. Anything else after
// "${" that is not a variable name followed by "}" or ":-default}" is not a
// reference and is kept literally, as is a bare $VAR.
func expand(s string, lookup func(string) (string, bool)) (out string, missing []string) {
	i := strings.Index(s, "${")
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		rest := s[i+2:]
		name, def, hasDef, n := parseRef(rest)
		if n == 0 {
			b.WriteString("${")
			s = rest
		} else {
			v, ok := lookup(name)
			switch {
			case ok:
				b.WriteString(v)
			case hasDef:
				b.WriteString(def)
			default:
				b.WriteString(s[i : i+2+n])
				if !slices.Contains(missing, name) {
					missing = append(missing, name)
				}
			}
			s = rest[n:]
		}
		i = strings.Index(s, "${")
	}
	b.WriteString(s)
	return b.String(), missing
}

// parseRef parses what follows "${": a variable name, then either "}" or
// ":-default}". It returns the number of bytes consumed, or 0 if rest does
// not start a reference.
func parseRef(rest string) (name, def string, hasDef bool, n int) {
	j := 0
	for j < len(rest) && isNameByte(rest[j], j == 0) {
		j++
	}
	if j == 0 || j == len(rest) {
		return "", "", false, 0
	}
	name = rest[:j]
	if rest[j] == '}' {
		return name, "", false, j + 1
	}
	if strings.HasPrefix(rest[j:], ":-") {
		end := strings.IndexByte(rest[j+2:], '}')
		if end < 0 {
			return "", "", false, 0
		}
		return name, rest[j+2 : j+2+end], true, j + 2 + end + 1
	}
	return "", "", false, 0
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || !first && '0' <= c && c <= '9'
}
