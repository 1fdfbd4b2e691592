package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/codebridge/codebridge/httpserve/oauth"
)

// oauthFlags make the HTTP server an OAuth 2.1 resource server: the
// issuers whose access tokens it accepts, beside the static tokens.
type oauthFlags struct {
	issuers    []string
	resource   string
	scopes     []string
	claim      string
	allow      []oauth.Rule
	minRefresh time.Duration
	// introspection: the endpoint, and the client codebridge calls it as
	// (its secret read from a file when the setting is applied).
	introspectURL, introspectID, introspectSecret string
}

var oauthKnobs = []knob[oauthFlags]{
	{flag: "oauth-issuer", envs: []string{"CODEBRIDGE_OAUTH_ISSUERS"}, typ: "url", repeat: true,
		usage: "an OAuth authorization server whose JWT access tokens HTTP clients may send (repeatable; the variable takes a comma-separated list): its issuer URL, https (http only on loopback)",
		set: func(g *oauthFlags, v string) error {
			g.issuers = append(g.issuers, commaList(v)...)
			return nil
		}},
	{flag: "oauth-resource", envs: []string{"CODEBRIDGE_OAUTH_RESOURCE"}, typ: "url",
		usage: "this server's resource URL, the audience its access tokens must have (default: /mcp at the address listened on, such as http://127.0.0.1:8080/mcp)",
		set:   func(g *oauthFlags, v string) error { g.resource = v; return nil }},
	{flag: "oauth-scopes", envs: []string{"CODEBRIDGE_OAUTH_SCOPES"}, typ: "scopes",
		usage: "comma-separated scopes every access token must carry (a token without one is refused with 403 insufficient_scope)",
		set:   func(g *oauthFlags, v string) error { g.scopes = commaList(v); return nil }},
	{flag: "oauth-principal-claim", envs: []string{"CODEBRIDGE_OAUTH_PRINCIPAL_CLAIM"}, def: oauth.DefaultPrincipalClaim, typ: "claim",
		usage: "the access token's claim that names its holder, whose skills and sessions are their own: sub, or such as email or preferred_username",
		set: func(g *oauthFlags, v string) error {
			if v = strings.TrimSpace(v); v == "" {
				return fmt.Errorf("give a claim name, such as sub or email")
			}
			g.claim = v
			return nil
		}},
	{flag: "oauth-allow", envs: []string{"CODEBRIDGE_OAUTH_ALLOW"}, typ: "claim=value", repeat: true,
		usage: "admit only access tokens whose claim has this value, or a group name in the " + oauth.DefaultGroupsClaim + " claim (repeatable, any one admits; the variable takes a comma-separated list)",
		set: func(g *oauthFlags, v string) error {
			for _, item := range commaList(v) {
				r, err := oauth.ParseRule(item)
				if err != nil {
					return err
				}
				g.allow = append(g.allow, r)
			}
			return nil
		}},
	{flag: "oauth-key-refresh", envs: []string{"CODEBRIDGE_OAUTH_KEY_REFRESH"}, def: secondsText(oauth.DefaultMinRefresh), typ: "seconds",
		usage: "the shortest time between two fetches of an issuer's keys, made when a token names a key not seen yet",
		set:   func(g *oauthFlags, v string) (err error) { g.minRefresh, err = seconds(v); return }},
	{flag: "oauth-introspection-url", envs: []string{"CODEBRIDGE_OAUTH_INTROSPECTION_URL"}, typ: "url",
		usage: "an issuer's token introspection endpoint (RFC 7662): tokens that are not JWTs (opaque tokens) are validated there; with --oauth-introspection-client-id and --oauth-introspection-secret-file",
		set:   func(g *oauthFlags, v string) error { g.introspectURL = v; return nil }},
	{flag: "oauth-introspection-client-id", envs: []string{"CODEBRIDGE_OAUTH_INTROSPECTION_CLIENT_ID"}, typ: "id",
		usage: "the client id codebridge authenticates to the introspection endpoint with",
		set:   func(g *oauthFlags, v string) error { g.introspectID = v; return nil }},
	{flag: "oauth-introspection-secret-file", envs: []string{"CODEBRIDGE_OAUTH_INTROSPECTION_SECRET_FILE"}, typ: "file",
		usage: "a file holding that client's secret",
		set: func(g *oauthFlags, v string) error {
			b, err := os.ReadFile(v)
			if err != nil {
				return fmt.Errorf("reading the introspection secret: %v", err)
			}
			if g.introspectSecret = strings.TrimSpace(string(b)); g.introspectSecret == "" {
				return fmt.Errorf("%s is empty: write the client secret in it", v)
			}
			return nil
		}},
}

// config is the OAuth configuration these settings make; nil without an
// issuer.
func (g oauthFlags) config() *oauth.Config {
	if len(g.issuers) == 0 {
		return nil
	}
	cfg := &oauth.Config{Issuers: g.issuers, Resource: g.resource, Scopes: g.scopes, PrincipalClaim: g.claim, Allow: g.allow, MinRefresh: g.minRefresh}
	if g.introspectURL != "" || g.introspectID != "" || g.introspectSecret != "" {
		cfg.Introspection = &oauth.Introspection{URL: g.introspectURL, ClientID: g.introspectID, ClientSecret: g.introspectSecret}
	}
	return cfg
}
