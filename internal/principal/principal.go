package principal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Principal is who a session acts for: the local user, the holder of a
// named token, or the subject of an OAuth access token from an issuer.
// The zero value is the local user.
type Principal struct {
	token  string // the token's name, or the OAuth subject; "" for the local user
	named  bool
	issuer string // the OAuth issuer; "" for a static token
}

// oauthUserID starts the user id of an OAuth principal: a static token's
// name never holds white space (the token file splits on it), so no
// token name reads as an OAuth principal's id.
const oauthUserID = "oauth "

// Local is the one user of a stdio bridge.
func Local() Principal { return Principal{} }

// Token is the holder of the bearer token with this name (the name the
// token file gives it, or the SDK's user id of a verified token).
func Token(name string) Principal { return Principal{token: name, named: true} }

// OAuth is the subject (or the configured claim's value) of an access
// token that issuer signed. Two issuers' subjects of the same name are
// two principals, and no OAuth principal is ever a static token's.
func OAuth(issuer, subject string) Principal {
	return Principal{token: subject, named: true, issuer: issuer}
}

// ParseOAuth reads an OAuth principal as [Principal.String] names it
// without its "oauth:" prefix: SUBJECT@ISSUER, split at the last "@" (an
// issuer URL holds none), the issuer an http or https URL.
func ParseOAuth(s string) (Principal, error) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 || !(strings.HasPrefix(s[i+1:], "https://") || strings.HasPrefix(s[i+1:], "http://")) {
		return Principal{}, fmt.Errorf("%q is not SUBJECT@ISSUER (such as alice@https://sso.example.com/realms/team), as the audit names it after \"oauth:\"", s)
	}
	return OAuth(s[i+1:], s[:i]), nil
}

// UserID is the go-sdk's user id of p's verified token, which it binds
// each HTTP session to: the token's name, or "oauth ISSUER SUBJECT"
// (an issuer is a URL: it has no white space). [FromUserID] reads it back.
func (p Principal) UserID() string {
	if p.issuer != "" {
		return oauthUserID + p.issuer + " " + p.token
	}
	return p.token
}

// FromUserID is the principal of a verified token's user id, as
// [Principal.UserID] made it.
func FromUserID(id string) Principal {
	if rest, ok := strings.CutPrefix(id, oauthUserID); ok {
		if iss, sub, ok := strings.Cut(rest, " "); ok && iss != "" {
			return OAuth(iss, sub)
		}
	}
	return Token(id)
}

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

// String names the principal for logs and the audit: "local",
// "token:NAME", or "oauth:SUBJECT@ISSUER".
func (p Principal) String() string {
	switch {
	case !p.named:
		return "local"
	case p.issuer != "":
		return "oauth:" + p.token + "@" + p.issuer
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
// digest in hex) for a longer one, so that a key stays a short component;
// "o-SHA256" (the digest of issuer and subject) for an OAuth principal, a
// prefix no token's key has.
func (p Principal) Key() string {
	switch {
	case !p.named:
		return ""
	case p.issuer != "":
		sum := sha256.Sum256([]byte(p.issuer + "\x00" + p.token))
		return "o-" + hex.EncodeToString(sum[:])
	case plain.MatchString(p.token):
		return "t-" + p.token
	case len(p.token) <= 60:
		return "h-" + hex.EncodeToString([]byte(p.token))
	}
	sum := sha256.Sum256([]byte(p.token))
	return "s-" + hex.EncodeToString(sum[:])
}
