package gate

import (
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"strings"
	"sync"
)

// detector finds one kind of personal data: a pattern, and a check that
// removes near-misses the pattern alone would take (a card number that
// fails the Luhn check, an IBAN that fails mod 97, 999.1.1.1).
type detector struct {
	kind  string
	re    *regexp.Regexp
	valid func(string) bool // nil: every match counts
	// needs says whether text with these stats can hold a match at all,
	// so that most text is skipped without running the pattern.
	needs func(textStats) bool
	// prose says that a match is never inside a long base64 run (true of
	// the built-in kinds, not known of custom patterns).
	prose bool
}

// textStats are counted once per text, for the detectors' needs.
type textStats struct {
	digits                int
	at, dot, colons, dash bool
	ibanStart             bool // two capitals followed by two digits
}

func statsOf(s string) textStats {
	var t textStats
	colons := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			t.digits++
		case c == '@':
			t.at = true
		case c == '.':
			t.dot = true
		case c == ':' && i > 0 && i+1 < len(s) && isHex(s[i-1]) && (isHex(s[i+1]) || s[i+1] == ':'):
			colons++ // as in an IPv6 address, not in JSON or prose
		case c == '-':
			t.dash = true
		case c >= 'A' && c <= 'Z' && !t.ibanStart && i+3 < len(s):
			t.ibanStart = s[i+1] >= 'A' && s[i+1] <= 'Z' && isDigit(s[i+2]) && isDigit(s[i+3])
		}
	}
	t.colons = colons >= 2
	return t
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// Kinds are the built-in kinds of personal data, in the order they are
// looked for (an earlier kind wins where matches overlap).
var Kinds = []string{"email", "iban", "card", "ssn", "ip", "phone"}

// builtins are compiled on first use: a bridge that redacts nothing never
// pays for them.
var builtins = sync.OnceValue(func() map[string]detector {
	return map[string]detector{
		"email": {kind: "email", needs: func(t textStats) bool { return t.at },
			re: regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}\b`)},
		"iban": {kind: "iban", needs: func(t textStats) bool { return t.ibanStart }, valid: ibanValid,
			re: regexp.MustCompile(`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b`)},
		"card": {kind: "card", needs: func(t textStats) bool { return t.digits >= 13 }, valid: luhnValid,
			re: regexp.MustCompile(`\b[0-9](?:[ -]?[0-9]){12,18}\b`)},
		"ssn": {kind: "ssn", needs: func(t textStats) bool { return t.dash && t.digits >= 9 }, valid: ssnValid,
			re: regexp.MustCompile(`\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b`)},
		"phone": {kind: "phone", needs: func(t textStats) bool { return t.digits >= 8 }, valid: phoneValid,
			re: regexp.MustCompile(`(?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{2,4}\)[ .-]?|\b[0-9]{2,4}[ .-])[0-9]{2,4}[ .-][0-9]{3,4}(?:[ .-][0-9]{2,4})?\b`)},
		"ip": {kind: "ip", needs: func(t textStats) bool { return (t.dot && t.digits >= 4) || t.colons }, valid: ipValid,
			re: regexp.MustCompile(`\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b|\b(?:[0-9A-Fa-f]{1,4}:){2,7}(?::|[0-9A-Fa-f]{1,4})\b|\b(?:[0-9A-Fa-f]{1,4}:){1,6}:(?:[0-9A-Fa-f]{1,4}:){0,5}[0-9A-Fa-f]{1,4}\b`)},
	}
})

// customDetector is a user's pattern from the config ("redact": {"name":
// "regexp"}).
func customDetector(name, pattern string) (detector, error) {
	if !tokenName.MatchString(name) {
		return detector{}, fmt.Errorf("redact: %q is not a usable name: use letters, digits and _ (such as \"employee_id\")", name)
	}
	if _, builtin := builtins()[name]; builtin {
		return detector{}, fmt.Errorf("redact: %q is a built-in kind; give your pattern another name", name)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return detector{}, fmt.Errorf("redact: pattern %q: %w; write a Go regular expression (RE2 syntax)", name, err)
	}
	if re.MatchString("") {
		return detector{}, fmt.Errorf("redact: pattern %q matches empty text; make it match at least one character", name)
	}
	return detector{kind: name, re: re}, nil
}

var tokenName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,31}$`)

// digits returns the decimal digits of s.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// cardGroups are the ways card numbers are written in groups: 4-4-4-4
// (with up to 3 more digits), 4-6-5 (Amex) and 4-6-4 (Diners).
var cardGroups = regexp.MustCompile(`^(?:[0-9]{4}([ -][0-9]{4}){3}(?:[ -]?[0-9]{1,3})?|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5})$`)

// luhnValid: 13 to 19 digits, written as one number or in a card's
// groups (not a list of numbers that happens to be long enough), passing
// the Luhn check, not all the same digit.
func luhnValid(s string) bool {
	d := digits(s)
	if len(d) < 13 || len(d) > 19 || strings.Count(d, d[:1]) == len(d) {
		return false
	}
	if len(d) != len(s) && !cardGroups.MatchString(s) {
		return false
	}
	sum := 0
	for i := 0; i < len(d); i++ {
		n := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}

// ibanValid: the ISO 13616 mod-97 check.
func ibanValid(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	var b strings.Builder
	for _, r := range s[4:] + s[:4] {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			fmt.Fprintf(&b, "%d", r-'A'+10)
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(b.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// ssnValid: a US social security number that can be issued (not area 000,
// 666 or 9xx, group 00 or serial 0000).
func ssnValid(s string) bool {
	area, group, serial := s[:3], s[4:6], s[7:]
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}

// phoneValid: with a country code (+), 8 to 15 digits (E.164 allows 15);
// without, 10 or 11 (a national number with its area code). Dates,
// times and short numbers never get there.
func phoneValid(s string) bool {
	n := len(digits(s))
	if strings.HasPrefix(s, "+") {
		return n >= 8 && n <= 15
	}
	return n == 10 || n == 11
}

func ipValid(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && !a.IsUnspecified()
}
