package e2e

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// provider is a real OpenID provider (the npm package oidc-provider) on
// loopback, run by testdata/npm/oidc_provider.mjs.
type provider struct {
	t      *testing.T
	issuer string
	key    *rsa.PrivateKey
	kid    string
	stdin  io.WriteCloser
	done   chan struct{}
}

// oauthClient is a client of the provider: the client credentials grant
// gives it access tokens whose subject is its id.
type oauthClient struct {
	ID     string   `json:"client_id"`
	Secret string   `json:"client_secret"`
	Groups []string `json:"groups"`
}

// needProvider fails the test when node or the oidc-provider package is
// missing and CODEBRIDGE_E2E=1 requires it (npm ci --prefix testdata/npm
// installs it), and skips it otherwise.
func needProvider(t *testing.T) {
	t.Helper()
	needTool(t, "node", "nodejs")
	if _, err := os.Stat(filepath.Join(repoRoot, "testdata/npm/node_modules/oidc-provider/package.json")); err != nil {
		if os.Getenv("CODEBRIDGE_E2E") == "1" {
			t.Fatal("the npm package oidc-provider is not installed (npm ci --prefix testdata/npm), and CODEBRIDGE_E2E=1 requires this test")
		}
		t.Skip("the npm package oidc-provider is not installed (npm ci --prefix testdata/npm)")
	}
}

// startProvider starts a provider with a fresh RSA key named kid, on port
// (0: a free one), serving clients.
func startProvider(t *testing.T, kid string, port int, clients ...oauthClient) *provider {
	t.Helper()
	return startProviderWith(t, kid, map[string]any{"port": port}, clients...)
}

// startProviderWith is startProvider with more of the script's settings.
func startProviderWith(t *testing.T, kid string, settings map[string]any, clients ...oauthClient) *provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: "RS256", Use: "sig"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	settings["keys"], settings["clients"] = []json.RawMessage{jwk}, clients
	cfg, _ := json.Marshal(settings)
	cmd := exec.Command("node", filepath.Join(repoRoot, "testdata/npm/oidc_provider.mjs"), string(cfg))
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err = cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &provider{t: t, key: key, kid: kid, stdin: stdin, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "issuer=") {
		t.Fatalf("the OpenID provider did not start (%v):\n%s", err, stderr)
	}
	p.issuer = strings.TrimSpace(strings.TrimPrefix(line, "issuer="))
	t.Cleanup(p.stop)
	return p
}

// stop ends the provider (it exits when its stdin closes) and waits.
func (p *provider) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Error("the OpenID provider did not exit")
	}
}

// token gets an access token for resource from the provider with the
// client credentials grant, asking for scope (none if empty).
func (p *provider) token(t *testing.T, c oauthClient, resource, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}
	if scope != "" {
		form.Set("scope", scope)
	}
	req, _ := http.NewRequest("POST", p.issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error_description"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tr)
	if resp.StatusCode != 200 || tr.AccessToken == "" {
		t.Fatalf("the provider gave %s no token: %s %s", c.ID, resp.Status, tr.Error)
	}
	return tr.AccessToken
}

// forge signs claims with the provider's own key (as the provider
// would), for what its grants do not make, such as an expired token.
func (p *provider) forge(t *testing.T, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: p.key, KeyID: p.kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// unsigned makes a JWT by hand: header and claims, and a signature made
// by sign over them (none when sign is nil).
func unsigned(header, claims map[string]any, sign func([]byte) []byte) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	var sig []byte
	if sign != nil {
		sig = sign([]byte(input))
	}
	return input + "." + enc.EncodeToString(sig)
}

// challenge reads the parameters of a Bearer WWW-Authenticate header.
func challenge(t *testing.T, h http.Header) map[string]string {
	t.Helper()
	v := h.Get("WWW-Authenticate")
	rest, ok := strings.CutPrefix(v, "Bearer ")
	if !ok {
		t.Errorf("WWW-Authenticate is not a Bearer challenge: %q", v)
	}
	out := map[string]string{}
	for rest != "" {
		name, after, _ := strings.Cut(strings.TrimLeft(rest, ", "), "=")
		after = strings.TrimPrefix(after, `"`)
		var val strings.Builder
		i := 0
		for ; i < len(after) && after[i] != '"'; i++ {
			if after[i] == '\\' && i+1 < len(after) {
				i++
			}
			val.WriteByte(after[i])
		}
		out[name] = val.String()
		if i >= len(after) {
			break
		}
		rest = after[i+1:]
	}
	return out
}

// TestOAuthResourceServer: codebridge trusts one real OpenID provider.
// Without a token a client learns where to sign in (401 naming the
// protected resource metadata, which names the provider); tokens from
// the provider's client credentials grant open sessions whose principal
// is the token's subject, each with its own skills, apart from a static
// token of the same name. The attacker's tokens are refused, each with
// the error that says why and none quoted back or logged: expired, for
// another audience, from another provider, claiming the trusted issuer
// but signed with another key, alg none, HS256 keyed with the provider's
// public key, without the required scope, a holder outside the
// allow-list.
func TestOAuthResourceServer(t *testing.T) {
	needEnv(t)
	needProvider(t)
	alice := oauthClient{ID: "alice", Secret: "alice-secret-0123456789", Groups: []string{"team"}}
	bob := oauthClient{ID: "bob", Secret: "bob-secret-0123456789ab", Groups: []string{"team"}}
	mallory := oauthClient{ID: "mallory", Secret: "mallory-secret-012345678", Groups: []string{"visitors"}}
	idp := startProvider(t, "k1", 0, alice, bob, mallory)
	other := startProvider(t, "k1", 0, alice) // another provider, other keys, the same key id

	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	state := filepath.Join(t.TempDir(), "state")
	tokens := filepath.Join(t.TempDir(), "tokens")
	const staticAlice = "static-alice-0123456789abcdef"
	if err := os.WriteFile(tokens, []byte("alice "+staticAlice+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startHTTP(t, h, []string{"CODEBRIDGE_STATE_DIR=" + state}, "--token-file", tokens,
		"--oauth-issuer", idp.issuer, "--oauth-scopes", "mcp", "--oauth-allow", "groups=team", "--warm", "0")
	resource := b.url
	var secrets []string // every token the test sends: none may come back or be logged

	metaURL := checkSignInAdvertised(t, b, idp.issuer)

	// Valid tokens: each subject has its own skills, and the static token
	// named alice is another principal than the OAuth subject alice.
	aliceTok, bobTok := idp.token(t, alice, resource, "mcp"), idp.token(t, bob, resource, "mcp")
	secrets = append(secrets, aliceTok, bobTok, staticAlice)
	a := b.clientAs(t, "oauth-alice", aliceTok)
	mustContain(t, a.ok(`print(runtime.save_skill("report", "def report():\n    return 'oauth-alice'\n", "Alice's.")["name"])`), "report")
	bb := b.clientAs(t, "oauth-bob", bobTok)
	mustContain(t, bb.ok(`print("listed:", [s["name"] for s in runtime.list_skills()])`), "listed: []")
	st := b.clientAs(t, "static-alice", staticAlice)
	mustContain(t, st.ok(`print("listed:", [s["name"] for s in runtime.list_skills()])
print(runtime.save_skill("report", "def report():\n    return 'static-alice'\n", "Static.")["name"])`), "listed: []")
	mustContain(t, a.ok("from skills import report\nprint(report())"), "oauth-alice")
	if _, err := os.Stat(filepath.Join(state, "principals", "t-alice")); err != nil {
		t.Fatalf("the static token alice keeps its own state directory: %v", err)
	}
	// On the host, each alice's skills are found by the name the audit
	// gives.
	for flag, want := range map[string]string{"--oauth-principal=alice@" + idp.issuer: "Alice's.", "--principal=alice": "Static."} {
		cmd := exec.Command(binary, "skills", "list", flag)
		cmd.Env = append(os.Environ(), "CODEBRIDGE_STATE_DIR="+state)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("codebridge skills %s: %v\n%s", flag, err, out)
		}
	}

	secrets = append(secrets, refuseAttackersTokens(t, b, idp, other, mallory, alice, staticAlice, metaURL)...)

	// The audit names each OAuth principal by subject and issuer.
	audit, err := os.ReadFile(filepath.Join(state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"principal":"oauth:alice@` + idp.issuer + `"`, `"principal":"oauth:bob@` + idp.issuer + `"`, `"principal":"token:alice"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("the audit has no %s", want)
		}
	}
	checkNoTokenLeaked(t, b, string(audit), secrets)
}

// checkSignInAdvertised: without a token, a 401 says where to sign in,
// and the metadata it names names the provider. It returns the
// metadata's URL.
func checkSignInAdvertised(t *testing.T, b *httpBridge, issuer string) string {
	t.Helper()
	resource := b.url
	// No token: a 401 that says where to sign in, and the metadata names
	// the provider.
	status, hdr, _ := b.initialize(t, "")
	ch := challenge(t, hdr)
	metaURL := strings.Replace(resource, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	if status != 401 || ch["resource_metadata"] != metaURL || ch["error"] != "" {
		t.Fatalf("no token: %d %q, want 401 with resource_metadata=%s", status, hdr.Get("WWW-Authenticate"), metaURL)
	}
	resp, err := http.Get(metaURL)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		Scopes               []string `json:"scopes_supported"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta.Resource != resource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != issuer || len(meta.Scopes) != 1 {
		t.Fatalf("the protected resource metadata: %+v, want resource %s and the issuer %s", meta, resource, issuer)
	}

	return metaURL
}

// refuseAttackersTokens sends the attacker's tokens: each is refused with
// the error that says why, and none is quoted back. It returns them.
func refuseAttackersTokens(t *testing.T, b *httpBridge, idp, other *provider, mallory, alice oauthClient, staticAlice, metaURL string) []string {
	t.Helper()
	resource := b.url
	var secrets []string
	// The attacker's tokens.
	pub, _ := x509.MarshalPKIXPublicKey(&idp.key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	now := time.Now().Unix()
	good := func() map[string]any {
		return map[string]any{"iss": idp.issuer, "sub": "alice", "aud": resource, "scope": "mcp", "groups": []string{"team"},
			"iat": now, "exp": now + 600, "jti": fmt.Sprint(now)}
	}
	expired := good()
	expired["iat"], expired["exp"] = now-7200, now-3600
	hs := func(input []byte) []byte { m := hmac.New(sha256.New, pubPEM); m.Write(input); return m.Sum(nil) }
	cases := []struct {
		name, token    string
		status         int
		code, describe string
	}{
		{"expired", idp.forge(t, expired), 401, "invalid_token", "expired"},
		{"another audience", idp.token(t, alice, "http://127.0.0.1:1/mcp", "mcp"), 401, "invalid_token", "audience"},
		{"another issuer", other.token(t, alice, resource, "mcp"), 401, "invalid_token", "issuer is not one this server trusts"},
		{"the trusted issuer claimed, another key", other.forge(t, good()), 401, "invalid_token", "signature"},
		{"alg none", unsigned(map[string]any{"alg": "none", "typ": "at+jwt"}, good(), nil), 401, "invalid_token", "asymmetric"},
		{"HS256 keyed with the public key", unsigned(map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": "k1"}, good(), hs), 401, "invalid_token", "asymmetric"},
		{"no scope", idp.token(t, alice, resource, ""), 403, "insufficient_scope", "scope"},
		{"outside the allow-list", idp.token(t, mallory, resource, "mcp"), 403, "access_denied", "not among those allowed"},
		{"a static token's lookalike", staticAlice + "x", 401, "invalid_token", ""},
	}
	for _, c := range cases {
		secrets = append(secrets, c.token)
		status, hdr, body := b.initialize(t, c.token)
		ch := challenge(t, hdr)
		if status != c.status || ch["error"] != c.code || !strings.Contains(ch["error_description"], c.describe) || ch["resource_metadata"] != metaURL {
			t.Errorf("%s: %d %q, want %d with error %s about %q", c.name, status, hdr.Get("WWW-Authenticate"), c.status, c.code, c.describe)
		}
		if strings.Contains(body, c.token) || strings.Contains(hdr.Get("WWW-Authenticate"), c.token) {
			t.Errorf("%s: the refusal quotes the token", c.name)
		}
	}

	return secrets
}

// checkNoTokenLeaked: no token is in codebridge's log or audit.
func checkNoTokenLeaked(t *testing.T, b *httpBridge, audit string, secrets []string) {
	t.Helper()
	for _, tok := range secrets {
		// A JWT's signature alone is secret enough to look for.
		sig := tok[strings.LastIndexByte(tok, '.')+1:]
		if len(sig) < 16 {
			sig = tok
		}
		if strings.Contains(b.stderr.String(), sig) || strings.Contains(audit, sig) {
			t.Errorf("a token is in codebridge's log or audit")
		}
	}
}

// TestOAuthKeyRotation: the provider replaces its signing key (it
// restarts at the same address with a new key under a new key id);
// codebridge, without a restart, accepts the tokens of the new key and
// refuses those of the old, which the provider no longer publishes.
func TestOAuthKeyRotation(t *testing.T) {
	needEnv(t)
	needProvider(t)
	alice := oauthClient{ID: "alice", Secret: "alice-secret-0123456789"}
	idp := startProvider(t, "before", 0, alice)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	// A refresh may follow another at once: the rotation is seen on the
	// first token that names the new key.
	b := startHTTP(t, h, nil, "--oauth-issuer", idp.issuer, "--oauth-key-refresh", "0.001", "--warm", "0")
	old := idp.token(t, alice, b.url, "mcp")
	if status, hdr, _ := b.initialize(t, old); status != 200 {
		t.Fatalf("a token of the first key: %d %q", status, hdr.Get("WWW-Authenticate"))
	}

	u, _ := url.Parse(idp.issuer)
	var port int
	if _, err := fmt.Sscan(u.Port(), &port); err != nil {
		t.Fatalf("the provider's port %q: %v", u.Port(), err)
	}
	idp.stop()
	rotated := startProvider(t, "after", port, alice)
	if rotated.issuer != idp.issuer {
		t.Fatalf("the provider came back as %s, not %s", rotated.issuer, idp.issuer)
	}
	fresh := rotated.token(t, alice, b.url, "mcp")
	c := b.clientAs(t, "alice-after-rotation", fresh)
	mustContain(t, c.ok("print(6*7)"), "42")
	status, hdr, _ := b.initialize(t, old)
	if ch := challenge(t, hdr); status != 401 || ch["error"] != "invalid_token" || !strings.Contains(ch["error_description"], "does not publish") {
		t.Fatalf("a token of the retired key: %d %q, want 401 invalid_token", status, hdr.Get("WWW-Authenticate"))
	}
}

// TestOAuthClientDiscovers: a real MCP client (the go-sdk's, with its
// client credentials handler) given only codebridge's URL and its client
// credentials follows the 401 to the protected resource metadata, the
// provider's metadata and its token endpoint, and runs code as its
// subject. The provider binds the audience itself (as Keycloak's
// audience mapper does), for the client sends no resource indicator.
func TestOAuthClientDiscovers(t *testing.T) {
	needEnv(t)
	needProvider(t)
	carol := oauthClient{ID: "carol", Secret: "carol-secret-0123456789a"}
	audience := filepath.Join(t.TempDir(), "audience")
	if err := os.WriteFile(audience, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	idp := startProviderWith(t, "k1", map[string]any{"defaultResourceFile": audience}, carol)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	state := filepath.Join(t.TempDir(), "state")
	b := startHTTP(t, h, []string{"CODEBRIDGE_STATE_DIR=" + state}, "--oauth-issuer", idp.issuer, "--oauth-scopes", "mcp", "--warm", "0")
	if err := os.WriteFile(audience, []byte(b.url), 0o600); err != nil {
		t.Fatal(err)
	}
	handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: carol.ID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: carol.Secret}}})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "discovering-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url, OAuthHandler: handler, DisableStandaloneSSE: true}, oldProtocol)
	if err != nil {
		t.Fatalf("the client did not sign in by itself: %v", err)
	}
	defer cs.Close()
	r, err := runPython(cs, "print(runtime.save_skill('mine', 'def mine():\\n    return 1\\n', 'Carol\\'s.')['name'])")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r.text, "mine")
	audit, err := os.ReadFile(filepath.Join(state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"principal":"oauth:carol@` + idp.issuer + `"`; !strings.Contains(string(audit), want) {
		t.Fatalf("the audit does not name carol's OAuth principal %s", want)
	}
}

// TestOAuthOpaqueTokensIntrospected: the provider issues opaque access
// tokens; codebridge asks its introspection endpoint (RFC 7662) as its
// own client. A token of the grant works and names its client; a made-up
// token, a revoked one and one for another audience are refused.
func TestOAuthOpaqueTokensIntrospected(t *testing.T) {
	needEnv(t)
	needProvider(t)
	dave := oauthClient{ID: "dave", Secret: "dave-secret-0123456789ab"}
	self := oauthClient{ID: "codebridge", Secret: "codebridge-secret-012345"}
	idp := startProviderWith(t, "k1", map[string]any{"format": "opaque"}, dave, self)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(self.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	introspections, introspectionURL := countingProxy(t, idp.issuer)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	state := filepath.Join(t.TempDir(), "state")
	b := startHTTP(t, h, []string{"CODEBRIDGE_STATE_DIR=" + state}, "--oauth-issuer", idp.issuer, "--oauth-scopes", "mcp",
		"--oauth-principal-claim", "client_id", "--oauth-introspection-url", introspectionURL+"/token/introspection",
		"--oauth-introspection-client-id", self.ID, "--oauth-introspection-secret-file", secret, "--warm", "0")

	tok := idp.token(t, dave, b.url, "mcp")
	if strings.Count(tok, ".") == 2 {
		t.Fatal("the provider issued a JWT, not an opaque token")
	}
	c := b.clientAs(t, "dave", tok)
	mustContain(t, c.ok("print(6*7)"), "42")
	audit, err := os.ReadFile(filepath.Join(state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"principal":"oauth:dave@` + idp.issuer + `"`; !strings.Contains(string(audit), want) {
		t.Fatalf("the audit does not name dave's OAuth principal %s", want)
	}
	if strings.Contains(b.stderr.String()+string(audit), tok) {
		t.Fatal("dave's token is in codebridge's log or audit")
	}

	revoked := idp.token(t, dave, b.url, "mcp")
	form := url.Values{"token": {revoked}}
	req, _ := http.NewRequest("POST", idp.issuer+"/token/revocation", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(dave.ID, dave.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoking: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, c := range []struct{ name, token, about string }{
		{"made up", "opaque-but-made-up-0123456789abcdefghij", "not active"},
		{"revoked", revoked, "not active"},
		{"another audience", idp.token(t, dave, "http://127.0.0.1:1/mcp", "mcp"), "audience"},
	} {
		status, hdr, body := b.initialize(t, c.token)
		ch := challenge(t, hdr)
		if status != 401 || ch["error"] != "invalid_token" || !strings.Contains(ch["error_description"], c.about) {
			t.Errorf("%s: %d %q, want 401 invalid_token about %q", c.name, status, hdr.Get("WWW-Authenticate"), c.about)
		}
		if strings.Contains(body+hdr.Get("WWW-Authenticate")+b.stderr.String(), c.token) {
			t.Errorf("%s: the token is quoted in the answer or the log", c.name)
		}
	}

	// The attacker repeats a made-up token: the provider is asked once.
	const repeated = "opaque-and-repeated-0123456789abcdefghij"
	before := introspections.Load()
	for range 10 {
		status, hdr, _ := b.initialize(t, repeated)
		if ch := challenge(t, hdr); status != 401 || !strings.Contains(ch["error_description"], "not active") {
			t.Fatalf("a repeated made-up token: %d %q, want 401 not active", status, hdr.Get("WWW-Authenticate"))
		}
	}
	if n := introspections.Load() - before; n != 1 {
		t.Errorf("10 requests with one made-up token made %d introspection requests, want 1", n)
	}
	if strings.Contains(b.stderr.String(), repeated) {
		t.Error("the repeated token is in codebridge's log")
	}
}

// countingProxy is a reverse proxy on loopback in front of target that
// counts the requests it passes; it returns the count and its URL.
func countingProxy(t *testing.T, target string) (*atomic.Int32, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	n := &atomic.Int32{}
	srv := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		n.Add(1)
		r.SetURL(u)
	}})
	t.Cleanup(srv.Close)
	return n, srv.URL
}

// TestOAuthAllowComparesClaimsWhole: with --oauth-allow
// email=boss@corp.example and groups=team, the attacker's tokens, signed
// by the trusted provider's key, that carry the allowed value as a word
// of a longer string (an email "mallory@evil.example boss@corp.example",
// groups as the string "visitors team") are refused with 403
// access_denied; the allowed email, and a groups list that holds the
// group, are admitted.
func TestOAuthAllowComparesClaimsWhole(t *testing.T) {
	needEnv(t)
	needProvider(t)
	// The tokens are signed with the provider's key (forge): the grants
	// make no such claims.
	idp := startProvider(t, "k1", 0, oauthClient{ID: "unused", Secret: "unused-secret-0123456789"})
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	b := startHTTP(t, h, nil, "--oauth-issuer", idp.issuer, "--oauth-scopes", "mcp",
		"--oauth-allow", "email=boss@corp.example", "--oauth-allow", "groups=team", "--warm", "0")
	now := time.Now().Unix()
	token := func(claim string, value any) string {
		return idp.forge(t, map[string]any{"iss": idp.issuer, "sub": "mallory", "aud": b.url, "scope": "mcp",
			"iat": now, "exp": now + 600, claim: value})
	}
	var secrets []string
	for _, c := range []struct {
		name   string
		token  string
		status int
	}{
		{"an email holding the allowed one as a word", token("email", "mallory@evil.example boss@corp.example"), 403},
		{"groups, a string holding the group as a word", token("groups", "visitors team"), 403},
		{"the allowed email", token("email", "boss@corp.example"), 200},
		{"groups, a list holding the group", token("groups", []string{"visitors", "team"}), 200},
	} {
		secrets = append(secrets, c.token)
		status, hdr, _ := b.initialize(t, c.token)
		if status != c.status {
			t.Errorf("%s: %d %q, want %d", c.name, status, hdr.Get("WWW-Authenticate"), c.status)
			continue
		}
		if status == 403 && challenge(t, hdr)["error"] != "access_denied" {
			t.Errorf("%s: refused with %q, want access_denied", c.name, hdr.Get("WWW-Authenticate"))
		}
	}
	checkNoTokenLeaked(t, b, "", secrets)
}
