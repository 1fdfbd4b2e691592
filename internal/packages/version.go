package packages

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// pepVersion is a PEP 440 version, parsed: what the host compares when it
// checks that a wheel it holds meets a dependency's version specifiers
// and when it evaluates an environment marker.
type pepVersion struct {
	Epoch   int
	Release []int
	// Pre is the pre-release: "a", "b" or "rc" and its number; "" for none.
	Pre    string
	PreN   int
	Post   int // -1 for none
	Dev    int // -1 for none
	Local  []string
	public string // the normal form, without the local label
}

// versionPattern is PEP 440's permissive grammar (as packaging reads
// versions), lower-cased; numbers of at most 18 digits, so that each fits
// an int.
var versionPattern = regexp.MustCompile(`^v?(?:([0-9]{1,18})!)?([0-9]{1,18}(?:\.[0-9]{1,18}){0,31})` +
	`(?:[-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]{1,18})?)?` +
	`(?:-([0-9]{1,18})|[-_.]?(post|rev|r)[-_.]?([0-9]{1,18})?)?` +
	`(?:[-_.]?(dev)[-_.]?([0-9]{1,18})?)?` +
	`(?:\+([a-z0-9]{1,32}(?:[-_.][a-z0-9]{1,32}){0,15}))?$`)

// parseVersion reads a PEP 440 version ("2.1.0", "1.0rc1", "1!2.0.post1",
// "v1.0-beta.2", "1.0+cpu").
func parseVersion(s string) (pepVersion, error) {
	m := versionPattern.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return pepVersion{}, fmt.Errorf("%q is not a PEP 440 version", clip(s, 40))
	}
	v := pepVersion{Post: -1, Dev: -1}
	v.Epoch = atoi(m[1])
	for _, r := range strings.Split(m[2], ".") {
		v.Release = append(v.Release, atoi(r))
	}
	if m[3] != "" {
		v.Pre = map[string]string{"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}[m[3]]
		v.PreN = atoi(m[4])
	}
	switch {
	case m[5] != "":
		v.Post = atoi(m[5])
	case m[6] != "":
		v.Post = atoi(m[7])
	}
	if m[8] != "" {
		v.Dev = atoi(m[9])
	}
	if m[10] != "" {
		v.Local = strings.FieldsFunc(m[10], func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	}
	v.public = v.normal()
	return v, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // "" (an absent number) is 0; the pattern bounds the digits
	return n
}

// normal is the version's public part in PEP 440's normal form.
func (v pepVersion) normal() string {
	var b strings.Builder
	if v.Epoch != 0 {
		fmt.Fprintf(&b, "%d!", v.Epoch)
	}
	for i, r := range v.Release {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(r))
	}
	if v.Pre != "" {
		fmt.Fprintf(&b, "%s%d", v.Pre, v.PreN)
	}
	if v.Post >= 0 {
		fmt.Fprintf(&b, ".post%d", v.Post)
	}
	if v.Dev >= 0 {
		fmt.Fprintf(&b, ".dev%d", v.Dev)
	}
	return b.String()
}

// String is the version in its normal form ("1.0rc1", "2.0.post1+cpu").
func (v pepVersion) String() string {
	if len(v.Local) > 0 {
		return v.public + "+" + strings.Join(v.Local, ".")
	}
	return v.public
}

// Public is the normal form without the local label.
func (v pepVersion) Public() string { return v.public }

// IsPrerelease says whether the version is a pre- or development release.
func (v pepVersion) IsPrerelease() bool { return v.Pre != "" || v.Dev >= 0 }

// Compare orders versions as PEP 440 does: -1, 0 or 1.
func (v pepVersion) Compare(w pepVersion) int {
	if c := v.comparePublic(w); c != 0 {
		return c
	}
	return compareLocal(v.Local, w.Local)
}

// comparePublic orders the public parts of two versions.
func (v pepVersion) comparePublic(w pepVersion) int {
	if c := cmpInt(v.Epoch, w.Epoch); c != 0 {
		return c
	}
	if c := compareRelease(v.Release, w.Release); c != 0 {
		return c
	}
	if c := cmpInt(v.preKey(), w.preKey()); c != 0 {
		return c
	}
	if c := cmpInt(v.PreN, w.PreN); c != 0 && v.Pre != "" {
		return c
	}
	if c := cmpInt(v.Post, w.Post); c != 0 {
		return c
	}
	return cmpInt(devKey(v.Dev), devKey(w.Dev))
}

// preKey orders the pre-release kinds: a development release of a
// release (1.0.dev1) before its pre-releases, those before the release.
func (v pepVersion) preKey() int {
	switch {
	case v.Pre == "" && v.Post < 0 && v.Dev >= 0:
		return 0
	case v.Pre == "":
		return 4
	}
	return map[string]int{"a": 1, "b": 2, "rc": 3}[v.Pre]
}

// devKey orders no development release after any.
func devKey(dev int) int {
	if dev < 0 {
		return int(^uint(0) >> 1)
	}
	return dev
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareRelease compares release numbers as if the shorter had trailing
// zeros (1.0 == 1.0.0).
func compareRelease(a, b []int) int {
	for i := range max(len(a), len(b)) {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if c := cmpInt(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// compareLocal orders local labels: none first, then segment by
// segment, a number after any word, numbers by value, words by text.
func compareLocal(a, b []string) int {
	for i := range min(len(a), len(b)) {
		an, aerr := strconv.Atoi(a[i])
		bn, berr := strconv.Atoi(b[i])
		switch {
		case aerr == nil && berr == nil:
			if c := cmpInt(an, bn); c != 0 {
				return c
			}
		case aerr == nil:
			return 1
		case berr == nil:
			return -1
		default:
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
	}
	return cmpInt(len(a), len(b))
}

// Satisfies says whether v meets every specifier (">=1.2", "==2.*",
// "~=1.4", ...), pre-releases included: the host checks a version it
// holds, which the index chose. A specifier it cannot read is not met.
func (v pepVersion) Satisfies(specs []string) bool {
	for _, s := range specs {
		if !v.satisfies(s) {
			return false
		}
	}
	return true
}

// satisfies checks one specifier, as PEP 440 defines each operator.
func (v pepVersion) satisfies(spec string) bool {
	op, text := splitOperator(strings.TrimSpace(spec))
	if op == "===" {
		return strings.EqualFold(strings.TrimSpace(text), v.String())
	}
	prefix, wild := strings.CutSuffix(text, ".*")
	w, err := parseVersion(prefix)
	if op == "" || err != nil || (wild && op != "==" && op != "!=") {
		return false
	}
	switch op {
	case "==":
		return v.equals(w, wild)
	case "!=":
		return !v.equals(w, wild)
	case "<=":
		return v.comparePublic(w) <= 0
	case ">=":
		return v.comparePublic(w) >= 0
	case "<":
		return v.below(w)
	case ">":
		return v.above(w)
	case "~=":
		return v.compatible(w)
	}
	return false
}

// below is "<w": a pre-release of w's own release is not below it
// unless w is a pre-release.
func (v pepVersion) below(w pepVersion) bool {
	return v.comparePublic(w) < 0 && (w.IsPrerelease() || !v.IsPrerelease() || !sameBase(v, w))
}

// above is ">w": a post-release of w's own release is not above it
// unless w is a post-release.
func (v pepVersion) above(w pepVersion) bool {
	return v.comparePublic(w) > 0 && (w.Post >= 0 || v.Post < 0 || !sameBase(v, w))
}

// compatible is "~=w": at least w, and of w's release without its last
// number ("~=1.4.2" is ">=1.4.2, ==1.4.*").
func (v pepVersion) compatible(w pepVersion) bool {
	if len(w.Release) < 2 {
		return false
	}
	stem := pepVersion{Epoch: w.Epoch, Release: w.Release[:len(w.Release)-1], Post: -1, Dev: -1}
	return v.comparePublic(w) >= 0 && v.equals(stem, true)
}

// splitOperator cuts a specifier's operator from its version.
func splitOperator(spec string) (string, string) {
	for _, op := range []string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"} {
		if rest, ok := strings.CutPrefix(spec, op); ok {
			return op, strings.TrimSpace(rest)
		}
	}
	return "", spec
}

// equals is "==": with prefix, v's release starts with w's (and v's
// public part is w's when w has more than a release); else the public
// parts are equal, and the local labels too when w has one.
func (v pepVersion) equals(w pepVersion, prefix bool) bool {
	if !prefix {
		return v.comparePublic(w) == 0 && (len(w.Local) == 0 || compareLocal(v.Local, w.Local) == 0)
	}
	if v.Epoch != w.Epoch {
		return false
	}
	padded := append(slices.Clone(v.Release), make([]int, max(0, len(w.Release)-len(v.Release)))...)
	if !slices.Equal(padded[:len(w.Release)], w.Release) {
		return false
	}
	if w.Pre == "" && w.Post < 0 && w.Dev < 0 {
		return true
	}
	return v.Pre == w.Pre && v.PreN == w.PreN && v.Post == w.Post && v.Dev == w.Dev && len(v.Release) <= len(w.Release)
}

// sameBase says whether v and w have the same epoch and release.
func sameBase(v, w pepVersion) bool {
	return v.Epoch == w.Epoch && compareRelease(v.Release, w.Release) == 0
}
