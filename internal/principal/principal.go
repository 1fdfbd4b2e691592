package principal

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// Principal is who a session acts for: the local user, or the holder of
// a named token. The zero value is the local user.
type Principal struct {
	token string // the token's name; "" for the local user
	named bool
}

// Local is the one user of a stdio bridge.
func Local() Principal { return Principal{} }

// Token is the holder of the bearer token with this name (the name the
// token file gives it, or the SDK's user id of a verified token).
func Token(name string) Principal { return Principal{token: name, named: true} }

// IsLocal reports whether p is the local user.
func (p Principal) IsLocal() bool { return !p.named }

// Name is the principal's name as the token file gives it, or "local".
// It is data: print it quoted, never use it as a path.
func (p Principal) Name() string {
	if !p.named {
		return "local"
	}
	return p.token
}

// String names the principal for logs and the audit: "local" or
// "token:NAME".
func (p Principal) String() string {
	if !p.named {
		return "local"
	}
	return "token:" + p.token
}

// plain are the token names kept readable in a key: lower case only, so
// that two keys never differ by case alone, and starting with a letter
// or digit, so that a key is never "..", hidden, or read as an option.
var plain = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// Key is a single path component (and engine volume name part) that
// stands for p and for no other principal: "" for the local user, whose
// state keeps its old paths; "t-NAME" for a token whose name is plain
// (lower-case letters, digits, "_", ".", "-"); "h-HEX" (the name's bytes
// in hex) for any other name of at most 60 bytes, and "s-SHA256" (its
// digest in hex) for a longer one, so that a key stays a short component.
func (p Principal) Key() string {
	switch {
	case !p.named:
		return ""
	case plain.MatchString(p.token):
		return "t-" + p.token
	case len(p.token) <= 60:
		return "h-" + hex.EncodeToString([]byte(p.token))
	}
	sum := sha256.Sum256([]byte(p.token))
	return "s-" + hex.EncodeToString(sum[:])
}
