package httpserve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// MinTokenLength is the shortest bearer token accepted.
const MinTokenLength = 16

// Tokens are the bearer tokens the server accepts, each with the name of
// who holds it. Only their SHA-256 digests are kept.
type Tokens struct {
	names map[[sha256.Size]byte]string
}

// ParseTokens reads a token file: one token a line, or a name and a token
// separated by white space ("alice 3f9a..."); blank lines and lines
// starting with # are skipped. A token without a name is named
// "token-N" after its line. Messages never quote a token.
func ParseTokens(text string) (*Tokens, error) {
	t := &Tokens{names: map[[sha256.Size]byte]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		name, token := fmt.Sprintf("token-%d", n), f[0]
		switch len(f) {
		case 1:
		case 2:
			name, token = f[0], f[1]
		default:
			return nil, fmt.Errorf("line %d has %d words: write a token, or a name and a token", n, len(f))
		}
		if err := t.add(name, token); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if len(t.names) == 0 {
		return nil, errors.New("holds no token: write one token a line (make one with `openssl rand -hex 32`)")
	}
	return t, nil
}

// Add accepts one more token, held by name.
func (t *Tokens) add(name, token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("the token is shorter than %d characters: make one with `openssl rand -hex 32`", MinTokenLength)
	}
	sum := sha256.Sum256([]byte(token))
	if _, dup := t.names[sum]; dup {
		return errors.New("the token is given twice")
	}
	t.names[sum] = name
	return nil
}

// Merge returns t with the token of the environment (CODEBRIDGE_TOKEN)
// added, named "env"; either may be nil.
func Merge(t *Tokens, envToken string) (*Tokens, error) {
	if envToken == "" {
		return t, nil
	}
	if t == nil {
		t = &Tokens{names: map[[sha256.Size]byte]string{}}
	}
	if err := t.add("env", envToken); err != nil {
		return nil, fmt.Errorf("CODEBRIDGE_TOKEN: %w", err)
	}
	return t, nil
}

// verify is the go-sdk's TokenVerifier for t. The digest lookup takes
// the same time whatever the token's bytes.
func (t *Tokens) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	name, ok := t.names[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, fmt.Errorf("%w: the bearer token is not one this server accepts", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: name}, nil
}

// require wraps h so that it needs one of t's tokens. The go-sdk's
// middleware checks the token and gives h its holder (the session's
// user, which the go-sdk also binds each session to); a request it would
// refuse is refused here first, with the challenge RFC 6750 requires: the
// go-sdk (v1.8.0) sends WWW-Authenticate only with an OAuth resource
// metadata URL or scopes, which a server of static tokens has not, and
// its body ("no bearer token") does not say how to send one. Without the
// challenge, clients that know OAuth start its discovery, and report
// errors about client registration instead of the missing token.
func (t *Tokens) require(h http.Handler) http.Handler {
	// A static token has no expiry.
	checked := auth.RequireBearerToken(t.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, given := bearerToken(r)
		if !given {
			unauthorized(w, `Bearer realm="codebridge"`, "codebridge needs a bearer token and this request has none")
			return
		}
		if _, err := t.verify(r.Context(), token, r); err != nil {
			unauthorized(w, `Bearer realm="codebridge", error="invalid_token", error_description="the token is not one this server accepts"`,
				"codebridge does not accept this request's bearer token")
			return
		}
		checked.ServeHTTP(w, r)
	})
}

// bearerToken is the token of r's Authorization header, and whether it
// has one: "Bearer TOKEN", the scheme in any case.
func bearerToken(r *http.Request) (string, bool) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", false
	}
	return f[1], true
}

// unauthorized answers 401 with challenge, and a body that says what was
// wrong and how to send a token.
func unauthorized(w http.ResponseWriter, challenge, what string) {
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, what+": send the header \"Authorization: Bearer TOKEN\" with every request "+
		"(in an MCP client's server entry: \"headers\": {\"Authorization\": \"Bearer TOKEN\"}), "+
		"with a token from the server's operator (--token-file or CODEBRIDGE_TOKEN, at least "+strconv.Itoa(MinTokenLength)+" characters). "+
		"This server has no OAuth sign-in: a client that offers one should be given the header instead.", http.StatusUnauthorized)
}

// principal is the name of the token r carried, its user; "" on a server
// without tokens.
func principal(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}
