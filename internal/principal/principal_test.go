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
