// Package oauth makes codebridge an OAuth 2.1 resource server, as the MCP
// authorization specification describes one: it names the authorization
// servers it trusts in its protected resource metadata (RFC 9728), and
// it accepts an access token that is a JWT one of them signed, whose
// audience is this server's resource URL (RFC 8707), that has not expired
// and carries the scopes required.
//
// An issuer's keys are found through its metadata (RFC 8414, or OpenID
// Connect discovery), fetched once and cached; a token signed with a key
// id the cache lacks makes one fetch of the issuer's key set, at most
// one every [DefaultMinRefresh], so rotated keys are picked up without a
// restart and a stream of made-up key ids costs the issuer nothing.
// Nothing is fetched per request.
//
// A token's principal is its subject (or a configured claim), qualified
// by its issuer: internal/principal's OAuth principal, whose key and user
// id no static token's name can equal. Every refusal is a [Refusal]: the
// HTTP status, the RFC 6750 error code and a description that says what
// failed and never quotes the token.
package oauth
