package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/httpserve/oauth"
)

// oauthFlags make the HTTP server an OAuth 2.1 resource server: the
// issuers whose access tokens it accepts, beside the static tokens.
type oauthFlags struct {
	Issuers    []string      `flag:"oauth-issuer,repeatable" env:"CODEBRIDGE_OAUTH_ISSUERS" type:"url" parse:"commas" usage:"an OAuth authorization server whose JWT access tokens HTTP clients may send (repeatable; the variable takes a comma-separated list): its issuer URL, https (http only on loopback)" doc:"See docs/operator-guide.md, Signing in with OAuth."`
	Resource   string        `flag:"oauth-resource" env:"CODEBRIDGE_OAUTH_RESOURCE" type:"url" usage:"this server's resource URL, the audience its access tokens must have (default: /mcp at the address listened on, such as http://127.0.0.1:8080/mcp)"`
	Scopes     []string      `flag:"oauth-scopes" env:"CODEBRIDGE_OAUTH_SCOPES" type:"scopes" parse:"commas" usage:"comma-separated scopes every access token must carry (a token without one is refused with 403 insufficient_scope)"`
	Claim      string        `flag:"oauth-principal-claim" env:"CODEBRIDGE_OAUTH_PRINCIPAL_CLAIM" default:"{oauth.DefaultPrincipalClaim}" type:"claim" parse:"claim" usage:"the access token's claim that names its holder, whose skills and sessions are their own: sub, or such as email or preferred_username"`
	Allow      []oauth.Rule  `flag:"oauth-allow,repeatable" env:"CODEBRIDGE_OAUTH_ALLOW" type:"claim=value" parse:"rules" usage:"admit only access tokens whose claim has this value, or a group name in the {oauth.DefaultGroupsClaim} claim (repeatable, any one admits; the variable takes a comma-separated list)" doc:"A string claim must be the value whole, a JSON array claim hold it; only scope and scp are split on spaces."`
	MinRefresh time.Duration `flag:"oauth-key-refresh" env:"CODEBRIDGE_OAUTH_KEY_REFRESH" default:"{oauth.DefaultMinRefresh}" type:"seconds" usage:"the shortest time between two fetches of an issuer's keys, made when a token names a key not seen yet"`
	// Introspection: the endpoint, and the client codebridge calls it as
	// (its secret read from a file when the setting is applied).
	IntrospectURL    string `flag:"oauth-introspection-url" env:"CODEBRIDGE_OAUTH_INTROSPECTION_URL" type:"url" usage:"an issuer's token introspection endpoint (RFC 7662): tokens that are not JWTs (opaque tokens) are validated there; with --oauth-introspection-client-id and --oauth-introspection-secret-file"`
	IntrospectID     string `flag:"oauth-introspection-client-id" env:"CODEBRIDGE_OAUTH_INTROSPECTION_CLIENT_ID" type:"id" usage:"the client id codebridge authenticates to the introspection endpoint with"`
	IntrospectSecret string `flag:"oauth-introspection-secret-file" env:"CODEBRIDGE_OAUTH_INTROSPECTION_SECRET_FILE" type:"file" parse:"secret file" usage:"a file holding that client's secret"`
}

// complete checks the OAuth settings with OAuth's own words, when an
// issuer is given.
func (g *oauthFlags) complete(func(string) string) error {
	if cfg := g.config(); cfg != nil {
		return cfg.Validate()
	}
	return nil
}

// parseClaim reads a claim's name.
func parseClaim(v string) (string, error) {
	if v = strings.TrimSpace(v); v == "" {
		return "", fmt.Errorf("give a claim name, such as sub or email")
	}
	return v, nil
}

// parseRules reads a comma-separated list of claim=value rules.
func parseRules(v string) ([]oauth.Rule, error) {
	var out []oauth.Rule
	for _, item := range commaList(v) {
		r, err := oauth.ParseRule(item)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// readSecret reads a secret from the file v names.
func readSecret(v string) (string, error) {
	b, err := os.ReadFile(v)
	if err != nil {
		return "", fmt.Errorf("reading the introspection secret: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("%s is empty: write the client secret in it", v)
	}
	return secret, nil
}

// config is the OAuth configuration these settings make; nil without an
// issuer.
func (g oauthFlags) config() *oauth.Config {
	if len(g.Issuers) == 0 {
		return nil
	}
	cfg := &oauth.Config{Issuers: g.Issuers, Resource: g.Resource, Scopes: g.Scopes, PrincipalClaim: g.Claim, Allow: g.Allow, MinRefresh: g.MinRefresh}
	if g.IntrospectURL != "" || g.IntrospectID != "" || g.IntrospectSecret != "" {
		cfg.Introspection = &oauth.Introspection{URL: g.IntrospectURL, ClientID: g.IntrospectID, ClientSecret: g.IntrospectSecret}
	}
	return cfg
}
