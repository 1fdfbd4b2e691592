package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/codebridge/codebridge/internal/httpserve/oauth"
	"github.com/codebridge/codebridge/internal/principal"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// authenticator checks a request's bearer token: one of the static
// tokens, else (with OAuth) an access token of a trusted issuer.
type authenticator struct {
	tokens *Tokens
	oauth  *oauth.Verifier // nil without OAuth
	// metadataURL is the protected resource metadata's URL; "" without
	// OAuth.
	metadataURL string
	log         *slog.Logger
}

// errStatic is a token that is neither a static token nor (without
// OAuth) anything else.
var errStatic = errors.New("the token is not one this server accepts")

// verify returns the token's holder, or why it is refused: a static
// token is looked up first (its digest, in constant time), then an
// OAuth access token is validated.
func (a *authenticator) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	if name, ok := a.tokens.lookup(token); ok {
		return &auth.TokenInfo{UserID: principal.Token(name).UserID()}, nil
	}
	if a.oauth == nil {
		return nil, errStatic
	}
	return a.oauth.Verify(ctx, token)
}

// require wraps h so that it needs an accepted bearer token. The go-sdk's
// middleware gives h the token's holder (the session's user, which the
// go-sdk also binds each session to); a request it would refuse is
// refused here first, with the challenge RFC 6750 requires and, with
// OAuth, the resource metadata's URL (RFC 9728) MCP clients start their
// sign-in from. The go-sdk (v1.8.0) sends WWW-Authenticate only with a
// metadata URL or scopes, and without error or error_description.
func (a *authenticator) require(h http.Handler) http.Handler {
	// The token's expiry was checked by verify, with the same skew; a
	// static one has none.
	opts := &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: oauth.DefaultSkew}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, given := bearerToken(r)
		if !given {
			a.challenge(w, http.StatusUnauthorized, "", "", "codebridge needs a bearer token and this request has none")
			return
		}
		info, err := a.verify(r.Context(), token)
		if err != nil {
			a.refuse(w, r, err)
			return
		}
		verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, nil }
		auth.RequireBearerToken(verified, opts)(h).ServeHTTP(w, r)
	})
}

// refuse answers a request whose token verify refused, and logs why
// (never the token).
func (a *authenticator) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var ref *oauth.Refusal
	if !errors.As(err, &ref) {
		a.log.Info("refused a bearer token", "why", err.Error(), "remote", r.RemoteAddr)
		a.challenge(w, http.StatusUnauthorized, "invalid_token", "the token is not one this server accepts", "codebridge does not accept this request's bearer token")
		return
	}
	a.log.Info("refused an OAuth access token", "why", ref.Description, "remote", r.RemoteAddr)
	a.challenge(w, ref.Status(), ref.Code(), ref.Description, "codebridge refused this request's bearer token: "+ref.Description)
}

// challenge answers with status and a WWW-Authenticate challenge that
// carries code and description when code is set, and a body that says
// what was wrong and how to send a token. Without OAuth the challenge
// names the realm and no metadata: there is no sign-in to discover.
func (a *authenticator) challenge(w http.ResponseWriter, status int, code, description, what string) {
	var params []string
	if a.oauth == nil {
		params = append(params, `realm="codebridge"`)
	} else {
		params = append(params, "resource_metadata="+quote(a.metadataURL))
		if s := a.oauth.Scopes(); len(s) > 0 {
			params = append(params, "scope="+quote(strings.Join(s, " ")))
		}
	}
	if code != "" {
		params = append(params, "error="+quote(code), "error_description="+quote(description))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, what+": "+a.howTo(), status)
}

// howTo says how a client sends a token.
func (a *authenticator) howTo() string {
	static := "send the header \"Authorization: Bearer TOKEN\" with every request " +
		"(in an MCP client's server entry: \"headers\": {\"Authorization\": \"Bearer TOKEN\"}), " +
		"with a token from the server's operator (--token-file or CODEBRIDGE_TOKEN, at least " + strconv.Itoa(MinTokenLength) + " characters)."
	if a.oauth == nil {
		return static + " This server has no OAuth sign-in: a client that offers one should be given the header instead."
	}
	return "sign in through the authorization server named in " + a.metadataURL +
		" (an MCP client that supports OAuth does so by itself), or " + static
}

// quote makes s an RFC 7230 quoted-string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
