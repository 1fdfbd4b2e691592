package httpserve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

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

// farFuture is the expiry of a static token, which has none; the go-sdk's
// middleware wants one.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// verify is the go-sdk's TokenVerifier for t. The digest lookup takes
// the same time whatever the token's bytes.
func (t *Tokens) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	name, ok := t.names[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, fmt.Errorf("%w: the bearer token is not one this server accepts", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: name, Expiration: farFuture}, nil
}

// require wraps h so that it needs one of t's tokens.
func (t *Tokens) require(h http.Handler) http.Handler {
	return auth.RequireBearerToken(t.verify, nil)(h)
}
