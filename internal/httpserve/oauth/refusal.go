package oauth

import (
	"net/http"
)

// kind is a closed set of the reasons a token is refused.
type kind int

const (
	kindMalformed   kind = iota // not a JWT, or signed with an algorithm not accepted
	kindIssuer                  // an issuer not trusted
	kindSignature               // a signature that does not verify
	kindExpired                 // past exp
	kindAudience                // for another resource
	kindInvalid                 // other claims wrong or missing
	kindScope                   // a required scope missing
	kindDenied                  // not on the allow-list
	kindUnavailable             // the issuer's keys could not be fetched
)

// Refusal is why a token is refused: the HTTP status and RFC 6750 error
// code it is answered with, and a description that never quotes it.
type Refusal struct {
	kind        kind
	Description string
}

func refuse(k kind, description string) *Refusal { return &Refusal{kind: k, Description: description} }

func (r *Refusal) Error() string { return r.Description }

// Status is the HTTP status of the refusal: 403 when the token is valid
// but not enough (a scope, the allow-list), 503 when the issuer's keys
// could not be fetched, else 401.
func (r *Refusal) Status() int {
	switch r.kind {
	case kindScope, kindDenied:
		return http.StatusForbidden
	case kindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusUnauthorized
}

// Code is the refusal's error code in WWW-Authenticate (RFC 6750
// section 3.1; "access_denied" for the allow-list, whose refusal no new
// token of more scopes would lift).
func (r *Refusal) Code() string {
	switch r.kind {
	case kindScope:
		return "insufficient_scope"
	case kindDenied:
		return "access_denied"
	case kindUnavailable:
		return "temporarily_unavailable"
	}
	return "invalid_token"
}
