package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeIntrospection is an introspection endpoint (RFC 7662) on loopback
// that counts the requests it answers: the tokens in active are active,
// with those claims; any other token is not; while failing is set it
// answers 500.
type fakeIntrospection struct {
	url     string
	active  map[string]map[string]any
	asked   atomic.Int32
	failing atomic.Bool
}

func newFakeIntrospection(t *testing.T, active map[string]map[string]any) *fakeIntrospection {
	f := &fakeIntrospection{active: active}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.asked.Add(1)
		if f.failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		ans, ok := f.active[r.PostFormValue("token")]
		if !ok {
			ans = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// introspectingVerifier is a verifier that introspects at f, whose
// clock is *now, and whose log is kept in log.
func introspectingVerifier(t *testing.T, f *fakeIntrospection, allow []Rule, now *time.Time, log *bytes.Buffer) *Verifier {
	t.Helper()
	v, err := New(Config{Issuers: []string{"https://idp.example.com"}, Resource: testResource, Allow: allow,
		Introspection: &Introspection{URL: f.url, ClientID: "codebridge", ClientSecret: "secret-0123456789"}},
		slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	v.now = func() time.Time { return *now }
	return v
}

// activeAnswer is an introspection answer of an active token of
// https://idp.example.com for this resource, with extra claims.
func activeAnswer(now time.Time, extra map[string]any) map[string]any {
	ans := map[string]any{"active": true, "iss": "https://idp.example.com", "sub": "dave", "aud": testResource,
		"scope": "mcp", "exp": now.Add(time.Hour).Unix()}
	for k, v := range extra {
		ans[k] = v
	}
	return ans
}

// TestIntrospectionRefusalsCached: the attacker repeats a made-up opaque
// token; the identity provider is asked once per refusalTTL, not once
// per request, and each repeat is refused as the first was. The cache
// is by the token's digest: the token is not logged. A failure to ask
// is no answer and is not kept; a different made-up token is asked
// about.
func TestIntrospectionRefusalsCached(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFakeIntrospection(t, nil)
	var log bytes.Buffer
	v := introspectingVerifier(t, f, nil, &now, &log)
	const madeUp = "made-up-opaque-token-0123456789abcdef"
	refused := func(tok string) {
		t.Helper()
		_, err := v.Verify(context.Background(), tok)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Status() != 401 || !strings.Contains(ref.Description, "not active") {
			t.Fatalf("a made-up token: %v, want 401 not active", err)
		}
	}
	for range 50 {
		refused(madeUp)
	}
	if n := f.asked.Load(); n != 1 {
		t.Fatalf("50 requests with one made-up token asked the provider %d times, want once", n)
	}
	now = now.Add(refusalTTL - time.Nanosecond)
	refused(madeUp)
	if n := f.asked.Load(); n != 1 {
		t.Fatalf("within %s the refusal was not kept: %d asks", refusalTTL, n)
	}
	now = now.Add(time.Nanosecond)
	refused(madeUp)
	if n := f.asked.Load(); n != 2 {
		t.Fatalf("after %s the refusal was kept still: %d asks, want 2", refusalTTL, n)
	}
	refused("another-made-up-token-0123456789abcdef")
	if n := f.asked.Load(); n != 3 {
		t.Fatalf("another made-up token: %d asks, want 3", n)
	}

	f.failing.Store(true)
	for range 2 {
		_, err := v.Verify(context.Background(), "a-third-token-0123456789abcdefghij")
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Status() != 503 {
			t.Fatalf("an endpoint that fails: %v, want 503", err)
		}
	}
	if n := f.asked.Load(); n != 5 {
		t.Fatalf("a failure to ask was kept as an answer: %d asks, want 5", n)
	}
	if strings.Contains(log.String(), "made-up") || strings.Contains(log.String(), "third-token") {
		t.Fatalf("a token is in the log:\n%s", log.String())
	}
}

// TestIntrospectionAdmittedAndRefusedApart: a token the allow-list
// refuses (its email is one string holding the allowed address as its
// second word) is refused and its refusal kept; an admitted token is
// kept too, and a refusal never stands for it. An answer whose aud is
// one string holding the resource as a word is another audience.
func TestIntrospectionAdmittedAndRefusedApart(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFakeIntrospection(t, map[string]map[string]any{
		"boss-token-0123456789":    activeAnswer(now, map[string]any{"email": "boss@corp.example"}),
		"mallory-token-0123456789": activeAnswer(now, map[string]any{"email": "mallory@evil.example boss@corp.example"}),
		"aud-token-0123456789":     activeAnswer(now, map[string]any{"email": "boss@corp.example", "aud": "https://evil.example.com/mcp " + testResource}),
	})
	var log bytes.Buffer
	v := introspectingVerifier(t, f, []Rule{{Claim: "email", Value: "boss@corp.example"}}, &now, &log)
	for range 3 {
		_, err := v.Verify(context.Background(), "mallory-token-0123456789")
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Code() != "access_denied" {
			t.Fatalf("mallory's token: %v, want 403 access_denied", err)
		}
		_, err = v.Verify(context.Background(), "aud-token-0123456789")
		if !errors.As(err, &ref) || !strings.Contains(ref.Description, "audience") {
			t.Fatalf("a token whose aud is one string: %v, want another audience", err)
		}
		if ti, err := v.Verify(context.Background(), "boss-token-0123456789"); err != nil || ti.UserID == "" {
			t.Fatalf("boss's token: %v", err)
		}
	}
	if n := f.asked.Load(); n != 3 {
		t.Fatalf("3 tokens, 3 times each: %d asks, want 3", n)
	}
	if n := v.introspect.refused.len(); n != 2 {
		t.Fatalf("%d refusals kept, want 2", n)
	}
}

// TestAnswerCacheBounded: a full cache evicts its oldest answer; an
// answer past its end is not given.
func TestAnswerCacheBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newAnswerCache[int](3)
	key := func(i int) digest { return sha256.Sum256([]byte{byte(i)}) }
	for i := range 5 {
		c.put(key(i), i, now.Add(time.Minute))
	}
	if c.len() != 3 {
		t.Fatalf("%d answers kept, want 3", c.len())
	}
	for i := range 5 {
		got, ok := c.get(key(i), now)
		if want := i >= 2; ok != want || ok && got != i {
			t.Errorf("answer %d: %d %v, want kept=%v", i, got, ok, want)
		}
	}
	c.put(key(2), 22, now.Add(time.Minute)) // put again: now the newest
	c.put(key(5), 5, now.Add(time.Minute))
	if _, ok := c.get(key(3), now); ok {
		t.Error("the oldest answer (3) was not evicted")
	}
	if got, ok := c.get(key(2), now); !ok || got != 22 {
		t.Errorf("answer 2, put again: %d %v", got, ok)
	}
	if _, ok := c.get(key(5), now.Add(time.Minute)); ok {
		t.Error("an answer past its end was given")
	}
	if c.len() != 2 {
		t.Errorf("an answer past its end was kept: %d answers", c.len())
	}
}
