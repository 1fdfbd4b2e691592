package toon

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// number is a canonical TOON number token (spec §2), ready to be written.
type number string

var (
	errBadNumber = errors.New("toon: invalid number literal")
	errInfinite  = errors.New("toon: number literal out of range")
)

// jsonNumber canonicalises a JSON number literal; literals whose exponent
// is too large to represent at all become null (like ±Inf).
func jsonNumber(lit string) (any, error) {
	n, err := canonicalNumber(lit)
	if err == errInfinite {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// floatNumber returns the canonical form of f, or nil for NaN and ±Inf.
func floatNumber(f float64, bits int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	if f == 0 {
		return number("0")
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits)
	n, err := canonicalNumber(string(s))
	if err != nil { // cannot happen for AppendFloat output
		return nil
	}
	return n
}

// canonicalNumber converts the text of a JSON number to canonical TOON
// form without going through float64, so it is lossless. Integer literals
// (no fraction, no exponent) keep all their digits; other literals follow
// JavaScript's Number#toString layout: plain decimal for 1e-6 <= |n| < 1e21,
// otherwise d.ddde±x.
func canonicalNumber(lit string) (number, error) {
	s := lit
	neg := false
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[:i]
	if intPart == "" {
		return "", errBadNumber
	}
	s = s[i:]
	frac := ""
	if s != "" && s[0] == '.' {
		j := 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == 1 {
			return "", errBadNumber
		}
		frac, s = s[1:j], s[j:]
	}
	isInt := frac == ""
	exp := int64(0)
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		isInt = false
		s = s[1:]
		expNeg := false
		if s != "" && (s[0] == '+' || s[0] == '-') {
			expNeg, s = s[0] == '-', s[1:]
		}
		if s == "" {
			return "", errBadNumber
		}
		for k := 0; k < len(s); k++ {
			if !isDigit(s[k]) {
				return "", errBadNumber
			}
			if exp < 1e15 { // beyond this the value is absurd; saturate
				exp = exp*10 + int64(s[k]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
		s = ""
	}
	if s != "" {
		return "", errBadNumber
	}

	if isInt {
		d := strings.TrimLeft(intPart, "0")
		if d == "" {
			return "0", nil
		}
		if neg {
			return number("-" + d), nil
		}
		if len(d) == len(lit) {
			return number(lit), nil
		}
		return number(d), nil
	}

	// value = digits × 10^e10
	digits := intPart + frac
	e10 := exp - int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil
	}
	t := strings.TrimRight(digits, "0")
	e10 += int64(len(digits) - len(t))
	digits = t
	if e10 > 1e15 || e10 < -1e15 {
		// Exponent saturated while parsing (|exponent| > 1e15): the value
		// underflows to 0 or overflows to ±Inf (null), as §2 permits.
		if e10 < 0 {
			return "0", nil
		}
		return "", errInfinite
	}
	return number(formatDecimal(neg, digits, e10)), nil
}

// formatDecimal lays out ±0.digits×10^n (digits without leading or trailing
// zeros, non-empty) the way JavaScript's Number#toString does.
func formatDecimal(neg bool, digits string, e10 int64) string {
	k := int64(len(digits))
	n := e10 + k // position of the decimal point relative to digits
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		for i := int64(0); i < n-k; i++ {
			b.WriteByte('0')
		}
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		for i := int64(0); i < -n; i++ {
			b.WriteByte('0')
		}
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatInt(n-1, 10))
	}
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
