package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// algorithms are the signature algorithms a token may use: asymmetric
// ones only, so that "none" and an HMAC keyed with a public key are
// refused before any key is looked at.
var algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Verifier validates access tokens for one resource.
type Verifier struct {
	cfg        Config
	issuers    map[string]*issuer
	introspect *introspector // nil without introspection
	log        *slog.Logger
	now        func() time.Time
}

// New returns a verifier for cfg, whose Resource must be set. It
// fetches nothing: an issuer's keys are fetched when its first token
// comes.
func New(cfg Config, log *slog.Logger) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Resource == "" {
		return nil, errors.New("OAuth needs this server's resource URL: give --oauth-resource URL")
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = DefaultPrincipalClaim
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = DefaultMinRefresh
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: fetchTimeout}
	}
	if log == nil {
		log = slog.Default()
	}
	v := &Verifier{cfg: cfg, issuers: map[string]*issuer{}, log: log, now: time.Now}
	for _, iss := range cfg.Issuers {
		v.issuers[iss] = &issuer{url: iss, client: cfg.Client, minRefresh: cfg.MinRefresh, now: time.Now}
	}
	if cfg.Introspection != nil {
		v.introspect = newIntrospector(*cfg.Introspection, cfg.Client)
	}
	return v, nil
}

// Resource is the resource URL tokens must be for.
func (v *Verifier) Resource() string { return v.cfg.Resource }

// Metadata is this resource's protected resource metadata (RFC 9728).
func (v *Verifier) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.cfg.Resource,
		AuthorizationServers:   slices.Clone(v.cfg.Issuers),
		ScopesSupported:        slices.Clone(v.cfg.Scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "codebridge",
	}
}

// Scopes are the scopes every token must carry.
func (v *Verifier) Scopes() []string { return v.cfg.Scopes }

// Verify validates an access token and returns what the go-sdk keeps of
// it: the user id of its principal ([principal.OAuth]), its scopes and
// expiry. A JWT is validated here; any other token, with introspection
// configured, by the issuer's introspection endpoint. Every error is a
// *[Refusal].
func (v *Verifier) Verify(ctx context.Context, raw string) (*auth.TokenInfo, error) {
	if v.introspect != nil && strings.Count(raw, ".") != 2 {
		return v.introspect.verify(ctx, v, raw)
	}
	tok, err := jwt.ParseSigned(raw, algorithms)
	if err != nil {
		return nil, refuse(kindMalformed, "the token is not a JWT signed with an asymmetric algorithm (RS256, ES256, EdDSA...)")
	}
	if len(tok.Headers) != 1 {
		return nil, refuse(kindMalformed, "the token has more than one signature")
	}
	var unverified jwt.Claims
	if err = tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, refuse(kindMalformed, "the token's claims are not a JSON object")
	}
	is := v.issuers[unverified.Issuer]
	if is == nil {
		return nil, refuse(kindIssuer, "the token's issuer is not one this server trusts")
	}
	claims, all, err := v.checkSignature(ctx, is, tok)
	if err != nil {
		return nil, err
	}
	if err := v.checkClaims(is, claims); err != nil {
		return nil, err
	}
	return v.admit(is.url, all, claims.Expiry.Time())
}

// admit checks what a valid token of issuer must also have: the
// required scopes, the principal claim and a match of the allow-list.
func (v *Verifier) admit(issuer string, all map[string]any, exp time.Time) (*auth.TokenInfo, error) {
	scopes := scopesOf(all)
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(scopes, s) {
			return nil, refuse(kindScope, fmt.Sprintf("the token lacks the scope %q", s))
		}
	}
	name, _ := all[v.cfg.PrincipalClaim].(string)
	if name == "" {
		return nil, refuse(kindInvalid, fmt.Sprintf("the token has no %q claim to name its holder", v.cfg.PrincipalClaim))
	}
	if !v.allowed(all) {
		return nil, refuse(kindDenied, "the token's holder is not among those allowed on this server")
	}
	return &auth.TokenInfo{UserID: principal.OAuth(issuer, name).UserID(), Scopes: scopes, Expiration: exp}, nil
}

// checkSignature verifies tok with its issuer's keys and returns its
// claims.
func (v *Verifier) checkSignature(ctx context.Context, is *issuer, tok *jwt.JSONWebToken) (jwt.Claims, map[string]any, error) {
	keys, err := is.keysFor(ctx, tok.Headers[0].KeyID)
	if errors.Is(err, errNoKey) {
		return jwt.Claims{}, nil, refuse(kindSignature, "the token is signed with a key its issuer does not publish")
	}
	if err != nil {
		if !errors.Is(err, errRetryLater) {
			v.log.Warn("could not fetch an OAuth issuer's keys", "issuer", is.url, "err", err)
		}
		return jwt.Claims{}, nil, refuse(kindUnavailable, "the keys of the token's issuer could not be fetched; try again later")
	}
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != tok.Headers[0].Algorithm {
			continue
		}
		var claims jwt.Claims
		var all map[string]any
		if err := tok.Claims(k.Key, &claims, &all); err == nil {
			return claims, all, nil
		}
	}
	return jwt.Claims{}, nil, refuse(kindSignature, "the token's signature does not verify with its issuer's keys")
}

// checkClaims checks iss, exp, nbf and aud.
func (v *Verifier) checkClaims(is *issuer, c jwt.Claims) error {
	if c.Expiry == nil {
		return refuse(kindInvalid, "the token has no expiry (exp)")
	}
	err := c.ValidateWithLeeway(jwt.Expected{Issuer: is.url, Time: v.now()}, DefaultSkew)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return refuse(kindExpired, "the token has expired")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return refuse(kindInvalid, "the token is not valid yet (nbf or iat is in the future)")
	case err != nil:
		return refuse(kindInvalid, "the token's claims are not valid")
	}
	if !oauthex.MatchesResource(c.Audience, v.cfg.Resource) {
		return refuse(kindAudience, "the token's audience is not this server ("+v.cfg.Resource+"): ask the authorization server for a token with resource="+v.cfg.Resource)
	}
	return nil
}

// scopesOf reads a token's scopes: RFC 9068's space-separated "scope",
// or "scp", a list (Okta) or a space-separated string (Entra ID).
func scopesOf(all map[string]any) []string {
	if s, ok := all["scope"].(string); ok {
		return strings.Fields(s)
	}
	return scopeValues(all["scp"])
}

// scopeValues is a scope claim's scopes: a string's space-separated
// words, or a JSON array's strings.
func scopeValues(v any) []string {
	if s, ok := v.(string); ok {
		return strings.Fields(s)
	}
	return valuesOf(v)
}

// scopeClaims are the claims that are space-separated lists of scopes
// by their definition (RFC 9068's "scope", and "scp"): the only string
// claims whose words an allow rule looks at.
var scopeClaims = map[string]bool{"scope": true, "scp": true}

// allowed reports whether the token's claims match the allow-list (any
// rule), or there is none. A rule matches a string claim that equals its
// value whole, or a JSON array claim that holds it; a string is never
// split into words (a string email "mallory@evil.example
// boss@corp.example" is not boss@corp.example), except the scope
// claims, whose scopes are read as every scope check reads them.
func (v *Verifier) allowed(all map[string]any) bool {
	if len(v.cfg.Allow) == 0 {
		return true
	}
	for _, r := range v.cfg.Allow {
		values := valuesOf(all[r.Claim])
		if scopeClaims[r.Claim] {
			values = scopeValues(all[r.Claim])
		}
		if slices.Contains(values, r.Value) {
			return true
		}
	}
	return false
}

// valuesOf is a claim's value as a list of strings: a JSON array's
// strings, or a string whole (one value, never split on spaces).
func valuesOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
