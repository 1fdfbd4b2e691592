package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// Defaults of [Config], stated once.
const (
	// DefaultPrincipalClaim is the claim that names a token's principal.
	DefaultPrincipalClaim = "sub"
	// DefaultGroupsClaim is the claim an allow-list value without a
	// claim name is looked for in.
	DefaultGroupsClaim = "groups"
	// DefaultMinRefresh is the shortest time between two fetches of one
	// issuer's metadata and keys.
	DefaultMinRefresh = 30 * time.Second
	// DefaultSkew is the clock skew allowed on exp and nbf.
	DefaultSkew = 30 * time.Second
	// fetchTimeout bounds one fetch of an issuer's metadata or keys.
	fetchTimeout = 10 * time.Second
)

// Config configures a [Verifier].
type Config struct {
	// Issuers are the authorization servers whose tokens are accepted,
	// each its issuer URL exactly as its tokens' iss claim gives it.
	Issuers []string
	// Resource is this server's resource URL (such as
	// https://codebridge.example.com/mcp): a token's audience must be it.
	Resource string
	// Scopes are the scopes every token must carry.
	Scopes []string
	// PrincipalClaim names the claim whose value is the principal.
	// Empty means [DefaultPrincipalClaim].
	PrincipalClaim string
	// Allow, when not empty, admits only tokens that match one of its
	// rules.
	Allow []Rule
	// MinRefresh is the shortest time between two fetches of an issuer's
	// keys. Zero means [DefaultMinRefresh].
	MinRefresh time.Duration
	// Introspection, when not nil, validates tokens that are not JWTs
	// (opaque tokens) at an introspection endpoint (RFC 7662).
	Introspection *Introspection
	// Client fetches issuers' metadata and keys. Nil means a client of
	// its own.
	Client *http.Client
}

// Introspection is an issuer's token introspection endpoint (RFC 7662)
// and the credentials codebridge calls it with.
type Introspection struct {
	URL, ClientID, ClientSecret string
}

// Rule admits a token whose claim equals Value, or holds it when the
// claim is a JSON array (such as groups). A string claim is compared
// whole; only the scope claims ("scope", "scp") are read as the
// space-separated lists they are.
type Rule struct {
	Claim, Value string
}

// ParseRule reads an allow-list rule: "claim=value", or a bare value,
// which is looked for in the groups claim.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	claim, value, ok := strings.Cut(s, "=")
	if !ok {
		claim, value = DefaultGroupsClaim, s
	}
	claim, value = strings.TrimSpace(claim), strings.TrimSpace(value)
	if claim == "" || value == "" {
		return Rule{}, fmt.Errorf("%q is not an allow rule: give claim=value (such as email=alice@example.com) or a group name", s)
	}
	return Rule{Claim: claim, Value: value}, nil
}

// Validate says what is wrong with the configuration, or is nil: each
// issuer and the resource are absolute URLs, https except on a loopback
// host (plain http there, for tests and a local provider), without a
// fragment (and an issuer without a query); scopes have no white space.
func (c Config) Validate() error {
	if len(c.Issuers) == 0 {
		return errors.New("OAuth needs at least one issuer: give --oauth-issuer URL")
	}
	seen := map[string]bool{}
	for _, iss := range c.Issuers {
		if err := checkURL(iss); err != nil {
			return fmt.Errorf("--oauth-issuer %s: %w", iss, err)
		}
		if u, _ := url.Parse(iss); u.RawQuery != "" {
			return fmt.Errorf("--oauth-issuer %s: an issuer URL has no query", iss)
		}
		if seen[iss] {
			return fmt.Errorf("--oauth-issuer %s is given twice", iss)
		}
		seen[iss] = true
	}
	if c.Resource != "" {
		if err := checkURL(c.Resource); err != nil {
			return fmt.Errorf("--oauth-resource %s: %w", c.Resource, err)
		}
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return fmt.Errorf("the scope %q is not one scope: give names without spaces or quotes", s)
		}
	}
	if strings.TrimSpace(c.PrincipalClaim) != c.PrincipalClaim {
		return fmt.Errorf("the principal claim %q has white space around it", c.PrincipalClaim)
	}
	if in := c.Introspection; in != nil {
		if err := checkURL(in.URL); err != nil {
			return fmt.Errorf("--oauth-introspection-url %s: %w", in.URL, err)
		}
		if in.ClientID == "" || in.ClientSecret == "" {
			return errors.New("introspection needs the client id and secret codebridge authenticates with: give --oauth-introspection-client-id and --oauth-introspection-secret-file")
		}
	}
	if c.MinRefresh < 0 {
		return errors.New("the minimum time between key refreshes must not be negative")
	}
	return nil
}

// checkURL checks an issuer's or the resource's URL.
func checkURL(s string) error {
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return errors.New("holds white space; give the URL without it")
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return errors.New("is not an absolute URL such as https://idp.example.com/realms/team")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("has a fragment (#...); give the URL without it")
	}
	if u.User != nil {
		return errors.New("holds a user name or password; give the URL without them")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("is plain http on a host that is not loopback: use https (plain http is only for 127.0.0.1, ::1 and localhost)")
	}
	return fmt.Errorf("has the scheme %q: use https", u.Scheme)
}

// isLoopback reports whether host is a loopback name or address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MetadataURL is the URL of the protected resource metadata of a
// resource, as RFC 9728 section 3.1 makes it: the well-known path
// inserted between the host and the resource's path.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath(resource)
}

// MetadataPath is the path [MetadataURL] names.
func MetadataPath(resource string) string {
	const wellKnown = "/.well-known/oauth-protected-resource"
	u, err := url.Parse(resource)
	if err != nil || u.EscapedPath() == "" || u.EscapedPath() == "/" {
		return wellKnown
	}
	return wellKnown + u.EscapedPath()
}
