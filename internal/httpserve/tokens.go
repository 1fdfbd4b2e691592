package httpserve

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
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

// lookup is the name of the holder of token, and whether it is one of
// t's. The digest lookup takes the same time whatever the token's bytes.
func (t *Tokens) lookup(token string) (string, bool) {
	if t == nil {
		return "", false
	}
	name, ok := t.names[sha256.Sum256([]byte(token))]
	return name, ok
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

// userID is the user id of the token r carried (a static token's
// name, or an OAuth principal's id); "" on a server without tokens.
func userID(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}
