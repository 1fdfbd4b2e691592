package packages

import (
	"errors"
	"fmt"
	"strings"
)

// A PEP 508 environment marker ("python_version < '3.12' and extra ==
// 'excel'"), parsed. The host evaluates a dependency's marker for the
// sandbox's Python (its [Target]), never for the host's own.
type marker interface {
	eval(env map[string]string) (bool, error)
}

type markerAll []marker // "and"
type markerAny []marker // "or"

// markerCompare is one comparison; a side is a variable's name, or a
// literal when quoted.
type markerCompare struct {
	lhs, rhs             string
	lhsQuoted, rhsQuoted bool
	op                   string
}

// maxMarkerDepth bounds the nesting of parentheses in a marker.
const maxMarkerDepth = 16

// markerVariables are the variables a marker may name, with the legacy
// spellings packaging still reads.
var markerVariables = map[string]string{
	"implementation_name": "implementation_name", "implementation_version": "implementation_version",
	"os_name": "os_name", "platform_machine": "platform_machine", "platform_release": "platform_release",
	"platform_system": "platform_system", "platform_version": "platform_version",
	"python_full_version": "python_full_version", "platform_python_implementation": "platform_python_implementation",
	"python_version": "python_version", "sys_platform": "sys_platform", "extra": "extra",
	"os.name": "os_name", "sys.platform": "sys_platform", "platform.version": "platform_version",
	"platform.machine": "platform_machine", "platform.python_implementation": "platform_python_implementation",
	"python_implementation": "platform_python_implementation",
}

var errMarker = errors.New("not a PEP 508 marker")

// parseMarker reads a marker.
func parseMarker(s string) (marker, error) {
	toks, err := markerTokens(s)
	if err != nil {
		return nil, err
	}
	p := &markerParser{toks: toks}
	m, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("%w: %q after the end", errMarker, clip(p.toks[p.pos].text, 20))
	}
	return m, nil
}

// markerToken is a word of a marker: a quoted string, a variable, an
// operator, "and", "or" or a parenthesis.
type markerToken struct {
	text   string
	quoted bool
}

// markerTokens splits a marker into its words.
func markerTokens(s string) ([]markerToken, error) {
	var toks []markerToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"' || c == '\'':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("%w: a string has no closing quote", errMarker)
			}
			toks = append(toks, markerToken{text: s[i+1 : i+1+end], quoted: true})
			i += end + 2
		case c == '(' || c == ')':
			toks = append(toks, markerToken{text: s[i : i+1]})
			i++
		case strings.IndexByte("<>=!~", c) >= 0:
			j := i
			for j < len(s) && strings.IndexByte("<>=!~", s[j]) >= 0 {
				j++
			}
			toks = append(toks, markerToken{text: s[i:j]})
			i = j
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, markerToken{text: s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("%w: unexpected %q", errMarker, clip(s[i:], 10))
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

type markerParser struct {
	toks []markerToken
	pos  int
}

func (p *markerParser) peek(word string) bool {
	return p.pos < len(p.toks) && !p.toks[p.pos].quoted && p.toks[p.pos].text == word
}

// or is "a or b or ...".
func (p *markerParser) or(depth int) (marker, error) {
	var any markerAny
	for {
		m, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		any = append(any, m)
		if !p.peek("or") {
			break
		}
		p.pos++
	}
	if len(any) == 1 {
		return any[0], nil
	}
	return any, nil
}

// and is "a and b and ...".
func (p *markerParser) and(depth int) (marker, error) {
	var all markerAll
	for {
		m, err := p.atom(depth)
		if err != nil {
			return nil, err
		}
		all = append(all, m)
		if !p.peek("and") {
			break
		}
		p.pos++
	}
	if len(all) == 1 {
		return all[0], nil
	}
	return all, nil
}

// atom is "( marker )" or a comparison.
func (p *markerParser) atom(depth int) (marker, error) {
	if p.peek("(") {
		if depth >= maxMarkerDepth {
			return nil, fmt.Errorf("%w: parentheses nested deeper than %d", errMarker, maxMarkerDepth)
		}
		p.pos++
		m, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, fmt.Errorf("%w: a \"(\" is not closed", errMarker)
		}
		p.pos++
		return m, nil
	}
	lhs, err := p.value()
	if err != nil {
		return nil, err
	}
	op, err := p.operator()
	if err != nil {
		return nil, err
	}
	rhs, err := p.value()
	if err != nil {
		return nil, err
	}
	return markerCompare{lhs: lhs.text, lhsQuoted: lhs.quoted, op: op, rhs: rhs.text, rhsQuoted: rhs.quoted}, nil
}

// value is a quoted string or a variable's name (in its current
// spelling).
func (p *markerParser) value() (markerToken, error) {
	if p.pos >= len(p.toks) {
		return markerToken{}, fmt.Errorf("%w: it ends early", errMarker)
	}
	t := p.toks[p.pos]
	p.pos++
	if t.quoted {
		return t, nil
	}
	name, ok := markerVariables[t.text]
	if !ok {
		return markerToken{}, fmt.Errorf("%w: %q is not a marker variable", errMarker, clip(t.text, 30))
	}
	return markerToken{text: name}, nil
}

// operator is a comparison: a version operator, "in" or "not in".
func (p *markerParser) operator() (string, error) {
	if p.peek("not") && p.pos+1 < len(p.toks) && !p.toks[p.pos+1].quoted && p.toks[p.pos+1].text == "in" {
		p.pos += 2
		return "not in", nil
	}
	if p.pos < len(p.toks) && !p.toks[p.pos].quoted {
		switch op := p.toks[p.pos].text; op {
		case "in", "==", "!=", "<=", ">=", "<", ">", "~=", "===":
			p.pos++
			return op, nil
		}
	}
	return "", fmt.Errorf("%w: a comparison has no operator", errMarker)
}

func (m markerAll) eval(env map[string]string) (bool, error) {
	result := true
	for _, x := range m {
		ok, err := x.eval(env)
		if err != nil {
			return false, err
		}
		result = result && ok
	}
	return result, nil
}

func (m markerAny) eval(env map[string]string) (bool, error) {
	result := false
	for _, x := range m {
		ok, err := x.eval(env)
		if err != nil {
			return false, err
		}
		result = result || ok
	}
	return result, nil
}

// eval compares as packaging does: as PEP 440 versions when the operator
// is a version operator and both sides are versions, else as strings;
// names of extras are compared normalized (PEP 685).
func (m markerCompare) eval(env map[string]string) (bool, error) {
	lhs, rhs := m.side(m.lhs, m.lhsQuoted, env), m.side(m.rhs, m.rhsQuoted, env)
	if (!m.lhsQuoted && m.lhs == "extra") || (!m.rhsQuoted && m.rhs == "extra") {
		lhs, rhs = normalizeExtra(lhs), normalizeExtra(rhs)
	}
	switch m.op {
	case "in":
		return strings.Contains(rhs, lhs), nil
	case "not in":
		return !strings.Contains(rhs, lhs), nil
	case "===":
		return lhs == rhs, nil
	}
	if v, err := parseVersion(lhs); err == nil {
		if _, err := parseVersion(strings.TrimSuffix(rhs, ".*")); err == nil {
			return v.satisfies(m.op + rhs), nil
		}
	}
	switch m.op {
	case "==":
		return lhs == rhs, nil
	case "!=":
		return lhs != rhs, nil
	case "<":
		return lhs < rhs, nil
	case "<=":
		return lhs <= rhs, nil
	case ">":
		return lhs > rhs, nil
	case ">=":
		return lhs >= rhs, nil
	}
	return false, fmt.Errorf("%w: %q %s %q compares no versions", errMarker, clip(lhs, 20), m.op, clip(rhs, 20))
}

func (m markerCompare) side(text string, quoted bool, env map[string]string) string {
	if quoted {
		return text
	}
	return env[text]
}

// normalizeExtra is an extra's name as PEP 685 compares them; "" (no
// extra) stays "".
func normalizeExtra(s string) string {
	if s == "" {
		return ""
	}
	return normalize(s)
}

// markerEnv is what the markers see of the sandbox's Python: its version
// (python_full_version is the version with patch level 0, since the
// sandbox reports only MAJOR.MINOR), implementation, and the operating
// system and machine of its best platform tag. platform_release and
// platform_version are not known, and empty.
func (t Target) markerEnv() map[string]string {
	impl := map[string][2]string{"cp": {"cpython", "CPython"}, "pp": {"pypy", "PyPy"}}[t.Implementation]
	env := map[string]string{
		"python_version": t.Python, "python_full_version": t.Python + ".0", "implementation_version": t.Python + ".0",
		"implementation_name": impl[0], "platform_python_implementation": impl[1],
		"platform_release": "", "platform_version": "", "extra": "",
	}
	plat := ""
	if len(t.Platforms) > 0 {
		plat = t.Platforms[0]
	}
	switch {
	case strings.HasPrefix(plat, "win"):
		env["os_name"], env["sys_platform"], env["platform_system"] = "nt", "win32", "Windows"
		env["platform_machine"] = map[string]string{"win_amd64": "AMD64", "win32": "x86", "win_arm64": "ARM64"}[plat]
	case strings.HasPrefix(plat, "macosx"):
		env["os_name"], env["sys_platform"], env["platform_system"] = "posix", "darwin", "Darwin"
		env["platform_machine"] = tagMachine(plat, 3)
	default: // linux_*, manylinux*, musllinux*
		env["os_name"], env["sys_platform"], env["platform_system"] = "posix", "linux", "Linux"
		env["platform_machine"] = tagMachine(plat, 1)
	}
	return env
}

// tagMachine is the machine of a platform tag, after its first skip
// parts: "manylinux_2_36_x86_64" is x86_64, as are "manylinux2014_x86_64"
// and "linux_x86_64"; "macosx_11_0_arm64" is arm64.
func tagMachine(tag string, skip int) string {
	if rest, ok := strings.CutPrefix(tag, "manylinux_"); ok {
		tag, skip = rest, 2
	} else if rest, ok := strings.CutPrefix(tag, "musllinux_"); ok {
		tag, skip = rest, 2
	}
	parts := strings.SplitN(tag, "_", skip+1)
	if len(parts) <= skip {
		return ""
	}
	return parts[skip]
}
