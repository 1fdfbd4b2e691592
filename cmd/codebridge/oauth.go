package main

import (
	"fmt"
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
}

// config is the OAuth configuration these settings make; nil without an
// issuer.
func (g oauthFlags) config() *oauth.Config {
	if len(g.issuers) == 0 {
		return nil
	}
	return &oauth.Config{Issuers: g.issuers, Resource: g.resource, Scopes: g.scopes, PrincipalClaim: g.claim, Allow: g.allow, MinRefresh: g.minRefresh}
}
