package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testIssuer is an authorization server on loopback that publishes RFC
// 8414 metadata and one EC key, and counts the fetches of its keys.
type testIssuer struct {
	url     string
	key     crypto.Signer
	alg     jose.SignatureAlgorithm
	fetches atomic.Int32
}

func newTestIssuer(t testing.TB) *testIssuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return serveIssuer(t, key, jose.ES256)
}

// serveIssuer serves the metadata and the public key of key.
func serveIssuer(t testing.TB, key crypto.Signer, alg jose.SignatureAlgorithm) *testIssuer {
	is := &testIssuer{key: key, alg: alg}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"token_endpoint": is.url + "/token", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: string(alg), Use: "sig"}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is
}

// sign makes a token with claims, signed by the issuer's key under kid.
func (is *testIssuer) sign(t testing.TB, kid string, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: is.alg, Key: jose.JSONWebKey{Key: is.key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const testResource = "https://codebridge.example.com/mcp"

func (is *testIssuer) claims(sub string) map[string]any {
	now := time.Now().Unix()
	return map[string]any{"iss": is.url, "sub": sub, "aud": testResource, "exp": now + 600, "iat": now, "scope": "mcp other",
		"email": sub + "@example.com", "groups": []string{"team"}}
}

// TestKeysAreCachedAndRefreshesRateLimited: valid tokens never fetch the
// keys again; a stream of tokens naming unknown key ids makes at most
// one fetch per MinRefresh.
func TestKeysAreCachedAndRefreshesRateLimited(t *testing.T) {
	is := newTestIssuer(t)
	v, err := New(Config{Issuers: []string{is.url}, Resource: testResource, MinRefresh: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := is.sign(t, "k1", is.claims("alice"))
	for range 100 {
		ti, err := v.Verify(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		if principal.FromUserID(ti.UserID) != principal.OAuth(is.url, "alice") {
			t.Fatalf("user id %q", ti.UserID)
		}
	}
	for i := range 50 {
		_, err := v.Verify(context.Background(), is.sign(t, "made-up-"+string(rune('a'+i%26)), is.claims("alice")))
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Code() != "invalid_token" {
			t.Fatalf("a token of an unknown key: %v", err)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("the keys were fetched %d times, want once (cached, refresh rate-limited)", n)
	}
}

// TestRefusals: each way a token is wrong is refused with its own code
// and description, none quoting the token.
func TestRefusals(t *testing.T) {
	is := newTestIssuer(t)
	v, err := New(Config{Issuers: []string{is.url}, Resource: testResource, Scopes: []string{"mcp"}, PrincipalClaim: "email",
		Allow: []Rule{{Claim: "groups", Value: "team"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	with := func(k string, val any) string {
		c := is.claims("alice")
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return is.sign(t, "k1", c)
	}
	cases := []struct {
		name, token string
		status      int
		code, about string
	}{
		{"expired", with("exp", time.Now().Add(-time.Hour).Unix()), 401, "invalid_token", "expired"},
		{"no exp", with("exp", nil), 401, "invalid_token", "no expiry"},
		{"not yet", with("nbf", time.Now().Add(time.Hour).Unix()), 401, "invalid_token", "not valid yet"},
		{"audience", with("aud", "https://other.example.com/mcp"), 401, "invalid_token", "audience"},
		{"issuer", with("iss", "https://evil.example.com"), 401, "invalid_token", "issuer"},
		{"scope", with("scope", "other"), 403, "insufficient_scope", "mcp"},
		{"claim", with("email", nil), 401, "invalid_token", "email"},
		{"allow", with("groups", []string{"visitors"}), 403, "access_denied", "allowed"},
		{"garbage", "not-a-jwt-0123456789", 401, "invalid_token", "not a JWT"},
	}
	for _, c := range cases {
		_, err = v.Verify(context.Background(), c.token)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Status() != c.status || ref.Code() != c.code || !strings.Contains(ref.Description, c.about) {
			t.Errorf("%s: %v, want %d %s about %q", c.name, err, c.status, c.code, c.about)
			continue
		}
		if strings.Contains(ref.Description, c.token) {
			t.Errorf("%s: the description quotes the token", c.name)
		}
	}
	ti, err := v.Verify(context.Background(), with("aud", []string{"https://x.example.com", testResource + "/"}))
	if err != nil || principal.FromUserID(ti.UserID).Name() != "alice@example.com" {
		t.Fatalf("a token for this resource among others, named by email: %v %v", ti, err)
	}
}

// TestAllowComparesStringClaimsWhole: an allow rule matches a string
// claim only whole, and looks inside a claim only when it is a JSON
// array, or the scope claims, which are space-separated lists by their
// definition. The attacker's tokens, signed by the trusted issuer, put
// the allowed value as a word of a longer string.
func TestAllowComparesStringClaimsWhole(t *testing.T) {
	is := newTestIssuer(t)
	v, err := New(Config{Issuers: []string{is.url}, Resource: testResource, Allow: []Rule{
		{Claim: "email", Value: "boss@corp.example"}, {Claim: "groups", Value: "team"},
		{Claim: "scope", Value: "admin"}, {Claim: "scp", Value: "root"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		claim string
		value any
		admit bool
	}{
		{"email with the allowed address as its second word", "email", "mallory@evil.example boss@corp.example", false},
		{"email with the allowed address and a newline", "email", "boss@corp.example\nmallory@evil.example", false},
		{"email with the allowed address after a tab", "email", "x\tboss@corp.example", false},
		{"groups, a string with the allowed group as a word", "groups", "visitors team", false},
		{"the allowed email", "email", "boss@corp.example", true},
		{"email, an array holding it", "email", []string{"mallory@evil.example", "boss@corp.example"}, true},
		{"groups, an array holding it", "groups", []string{"visitors", "team"}, true},
		{"groups, a string that is the group", "groups", "team", true},
		{"scope, space-separated", "scope", "mcp admin", true},
		{"scp, space-separated", "scp", "read root", true},
		{"scp, an array", "scp", []string{"read", "root"}, true},
	}
	for _, c := range cases {
		claims := is.claims("mallory")
		delete(claims, "groups")
		delete(claims, "email")
		claims[c.claim] = c.value
		_, err := v.Verify(context.Background(), is.sign(t, "k1", claims))
		var ref *Refusal
		switch {
		case c.admit && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case !c.admit && (!errors.As(err, &ref) || ref.Code() != "access_denied"):
			t.Errorf("%s: %v, want 403 access_denied", c.name, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, bad := range []Config{
		{},
		{Issuers: []string{"http://idp.example.com"}},
		{Issuers: []string{"ftp://idp.example.com"}},
		{Issuers: []string{"https://idp.example.com#x"}},
		{Issuers: []string{"https://idp.example.com?a=b"}},
		{Issuers: []string{"idp.example.com"}},
		{Issuers: []string{"https://idp.example.com/a b"}},
		{Issuers: []string{"https://idp.example.com", "https://idp.example.com"}},
		{Issuers: []string{"https://idp.example.com"}, Resource: "http://codebridge.example.com/mcp"},
		{Issuers: []string{"https://idp.example.com"}, Scopes: []string{"a b"}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
	for _, good := range []Config{
		{Issuers: []string{"https://idp.example.com/realms/team"}},
		{Issuers: []string{"http://127.0.0.1:8081", "http://localhost:9/x", "http://[::1]:80"}, Resource: "http://127.0.0.1:8080/mcp"},
	} {
		if err := good.Validate(); err != nil {
			t.Errorf("%+v: %v", good, err)
		}
	}
	if MetadataURL("https://h.example.com/mcp") != "https://h.example.com/.well-known/oauth-protected-resource/mcp" ||
		MetadataURL("https://h.example.com") != "https://h.example.com/.well-known/oauth-protected-resource" {
		t.Fatal(MetadataURL("https://h.example.com/mcp"))
	}
	if u := metadataURLs("https://sso.example.com/realms/team"); u[0] != "https://sso.example.com/.well-known/oauth-authorization-server/realms/team" ||
		u[1] != "https://sso.example.com/realms/team/.well-known/openid-configuration" {
		t.Fatal(u)
	}
	if u := metadataURLs("http://127.0.0.1:9"); u[0] != "http://127.0.0.1:9/.well-known/oauth-authorization-server" || u[1] != "http://127.0.0.1:9/.well-known/openid-configuration" {
		t.Fatal(u)
	}
	if r, err := ParseRule("admins"); err != nil || r != (Rule{Claim: "groups", Value: "admins"}) {
		t.Fatal(r, err)
	}
	if r, err := ParseRule("email=a@b.c"); err != nil || r != (Rule{Claim: "email", Value: "a@b.c"}) {
		t.Fatal(r, err)
	}
}

// BenchmarkVerify is the cost of validating a token on a warm cache,
// ES256 and RS256 (2048 bits).
func BenchmarkVerify(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ES256", func(b *testing.B) { benchVerify(b, newTestIssuer(b)) })
	b.Run("RS256", func(b *testing.B) { benchVerify(b, serveIssuer(b, rsaKey, jose.RS256)) })
}

// BenchmarkKeyRefresh is the cost of one fetch of an issuer's keys on
// loopback (what a token of an unknown key id costs, at most once per
// MinRefresh).
func BenchmarkKeyRefresh(b *testing.B) {
	is := newTestIssuer(b)
	v, _ := New(Config{Issuers: []string{is.url}, Resource: testResource}, nil)
	iss := v.issuers[is.url]
	if err := iss.refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := iss.refresh(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func benchVerify(b *testing.B, is *testIssuer) {
	v, _ := New(Config{Issuers: []string{is.url}, Resource: testResource}, nil)
	tok := is.sign(b, "k1", is.claims("alice"))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}
