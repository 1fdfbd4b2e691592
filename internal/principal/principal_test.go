package principal

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyIsOneSafeComponent(t *testing.T) {
	names := []string{"alice", "Alice", "ALICE", "bob", "../../etc", "..", ".", "-rf", "a/b", `a\b`, "a\x00b",
		"t-alice", "h-616c696365", "ünïcode", strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("é", 40), strings.Repeat("é", 41), ""}
	seen := map[string]string{}
	for _, n := range names {
		k := Token(n).Key()
		if k == "" || k != filepath.Base(k) || k == "." || k == ".." || strings.ContainsAny(k, `/\`+"\x00") ||
			strings.HasPrefix(k, "-") || strings.HasPrefix(k, ".") {
			t.Errorf("Token(%q).Key() = %q is not one safe path component", n, k)
		}
		if len(k) > 130 {
			t.Errorf("Token(%q).Key() is %d bytes long", n, len(k))
		}
		folded := strings.ToLower(k)
		if other, dup := seen[folded]; dup {
			t.Errorf("Token(%q) and Token(%q) share the key %q (ignoring case)", n, other, k)
		}
		seen[folded] = n
	}
	if Local().Key() != "" || !Local().IsLocal() || Token("x").IsLocal() {
		t.Fatal("the local user keeps the empty key")
	}
	if Token("alice").Key() != "t-alice" || Token("Alice").Key() != "h-416c696365" {
		t.Fatalf("keys: %q %q", Token("alice").Key(), Token("Alice").Key())
	}
}

// TestOAuthNeverCollidesWithATokenName: an OAuth subject, whatever its
// name, is never a static token's principal: not by key, user id or
// audit name, and two issuers' subjects of one name are two principals.
func TestOAuthNeverCollidesWithATokenName(t *testing.T) {
	const iss, other = "https://idp.example.com", "https://other.example.com"
	for _, sub := range []string{"alice", "t-alice", "oauth", "env", "token-1", "a b", "", strings.Repeat("z", 100)} {
		o := OAuth(iss, sub)
		tok := Token(sub)
		if o.Key() == tok.Key() || o.UserID() == tok.UserID() || o.String() == tok.String() {
			t.Errorf("OAuth subject %q shares an identity with the token of that name: %q %q %q", sub, o.Key(), o.UserID(), o.String())
		}
		if !strings.HasPrefix(o.Key(), "o-") || o.Key() != filepath.Base(o.Key()) {
			t.Errorf("OAuth(%q).Key() = %q", sub, o.Key())
		}
		if o.Key() == OAuth(other, sub).Key() {
			t.Errorf("subject %q of two issuers shares a key", sub)
		}
		if FromUserID(o.UserID()) != o {
			t.Errorf("FromUserID(%q) = %v, want %v", o.UserID(), FromUserID(o.UserID()), o)
		}
		if o.Name() != sub || o.IsLocal() {
			t.Errorf("OAuth(%q): name %q", sub, o.Name())
		}
	}
	// A token's name has no white space, so it reads back as a token.
	for _, name := range []string{"alice", "oauth", "oauth:https://idp.example.com"} {
		if FromUserID(Token(name).UserID()) != Token(name) {
			t.Errorf("token %q does not read back as itself", name)
		}
	}
}

func TestParseOAuth(t *testing.T) {
	p, err := ParseOAuth("alice@example.com@https://sso.example.com/realms/team")
	if err != nil || p != OAuth("https://sso.example.com/realms/team", "alice@example.com") {
		t.Fatalf("%v %v", p, err)
	}
	if s := p.String(); s != "oauth:alice@example.com@https://sso.example.com/realms/team" {
		t.Fatal(s)
	}
	for _, bad := range []string{"alice", "alice@example.com", "@", "alice@ftp://x"} {
		if _, err := ParseOAuth(bad); err == nil {
			t.Errorf("%q was read as an OAuth principal", bad)
		}
	}
}
