package gate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRedact: no text makes redaction panic; redacting twice changes
// nothing more; the secret never shows, in no form (escaped, encoded);
// and putting the values back into a tool argument that carries the
// redacted text gives the original text where nothing was hidden in an
// encoded form (the model acts on tokens, the upstream gets the real
// values).
func FuzzRedact(f *testing.F) {
	for _, seed := range []string{
		"mail ann@example.com or call +44 20 7946 0958",
		"card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, ip 127.0.0.42",
		"token tok-abcdef123 and <email_1> written by hand",
		"", "\x00\xff", "0:0:0:0:0:0:0:1 123-45-6789",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := NewRedactor([]string{"all"}, nil, []Secret{{Name: "s.env.TOKEN", Value: "tok-abcdef123"}, {Name: "s.env.KEY", Value: "key-42"}})
		if err != nil {
			t.Fatal(err)
		}
		s := New(Config{Redactor: r}).NewSession()
		once := s.Redact(text)
		if twice := s.Redact(once); twice != once {
			t.Fatalf("redacting again changed %q to %q", once, twice)
		}
		if strings.Contains(once, "tok-abcdef123") {
			t.Fatalf("the secret shows in %q", once)
		}
		for _, sp := range s.find(once, maxDepth, false) {
			if sp.secret != "" {
				t.Fatalf("the secret shows in %q, encoded at %d", once, sp.start)
			}
		}
		if strings.Contains(text, "<") || strings.Contains(text, "tok-abcdef123") || !utf8.ValidString(text) {
			return // token-like parts, the secret itself, or bytes JSON cannot carry
		}
		if s.redactDepth(text, 0) != once {
			return // a value hidden in an encoded form is not put back
		}
		arg, _ := json.Marshal(map[string]string{"text": once})
		back, _ := s.Restore(arg)
		var got map[string]string
		if err := json.Unmarshal(back, &got); err != nil {
			t.Fatalf("restored arguments are not JSON: %s", back)
		}
		if got["text"] != text {
			t.Fatalf("restored %q, want %q", got["text"], text)
		}
	})
}
