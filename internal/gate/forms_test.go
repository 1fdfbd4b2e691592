package gate

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// result is a tool result carrying text, as an upstream sends it.
func result(text string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	return raw
}

// resultText is the text of a redacted result.
func resultText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("not a result (%v): %s", err, raw)
	}
	return r.Content[0].Text
}

// TestRedactSecretInJSONText: a tool that returns JSON as text escapes a
// secret's quote and backslash (and, in Python's default, its non-ASCII
// letters) once more than the result does; the secret is found in that
// form and the text stays JSON that holds the secret's name.
func TestRedactSecretInJSONText(t *testing.T) {
	secret := `pa"ss\wörd-42`
	s := newTestSession(t, nil, nil, []Secret{{Name: "svc.env.TOKEN", Value: secret}})
	goJSON, _ := json.Marshal(map[string]string{"TOKEN": secret})
	pyJSON := `{"TOKEN": "pa\"ss\\w\u00f6rd-42"}`
	for _, inner := range []string{string(goJSON), pyJSON} {
		text := resultText(t, s.RedactJSON(result(inner)))
		var env map[string]string
		if err := json.Unmarshal([]byte(text), &env); err != nil {
			t.Fatalf("the redacted text is no longer JSON (%v): %s", err, text)
		}
		if env["TOKEN"] != "<secret:svc.env.TOKEN>" {
			t.Fatalf("%s became %s", inner, text)
		}
	}
	// JSON text inside JSON text inside the result.
	twice, _ := json.Marshal(map[string]string{"log": string(goJSON)})
	if text := resultText(t, s.RedactJSON(result(string(twice)))); strings.Contains(text, "ss") {
		t.Fatalf("twice-escaped secret kept: %s", text)
	}
}

// TestRedactBase64: a secret or an email inside base64, at each byte
// offset, in both alphabets, padded or not, wrapped in lines or not, is
// found; the run is replaced by the base64 of the redacted bytes, in the
// same alphabet, padding and lines.
func TestRedactBase64(t *testing.T) {
	s := newTestSession(t, []string{"email"}, nil, []Secret{{Name: "svc.env.TOKEN", Value: "tok-9f8e7d6c5b4a"}})
	encs := map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw": base64.RawStdEncoding, "rawurl": base64.RawURLEncoding}
	for name, enc := range encs {
		for off := range 3 {
			for _, hidden := range []string{"tok-9f8e7d6c5b4a", "dana.reyes@example.org"} {
				plain := strings.Repeat("x", off) + "value=" + hidden + "; \u00ff\u00fe?>" + strings.Repeat("y", 100)
				b64 := enc.EncodeToString([]byte(plain))
				got := s.Redact("file: " + b64 + " end")
				run := strings.TrimSuffix(strings.TrimPrefix(got, "file: "), " end")
				raw := base64.RawStdEncoding
				if name == "url" || name == "rawurl" {
					raw = base64.RawURLEncoding
				}
				back, err := raw.DecodeString(strings.TrimRight(run, "="))
				if err != nil {
					t.Fatalf("%s off %d: the redacted run is not %s base64 (%v): %q", name, off, name, err, got)
				}
				if strings.Contains(string(back), hidden) || !strings.Contains(string(back), "value=<") {
					t.Fatalf("%s off %d: decoded %q", name, off, back)
				}
			}
		}
	}
	// MIME's 76-character lines.
	plain := strings.Repeat("lorem ipsum ", 20) + "tok-9f8e7d6c5b4a" + strings.Repeat(" dolor", 20)
	wrapped := base64.StdEncoding.EncodeToString([]byte(plain))
	var lines []string
	for len(wrapped) > 76 {
		lines, wrapped = append(lines, wrapped[:76]), wrapped[76:]
	}
	mime := strings.Join(append(lines, wrapped), "\r\n")
	got := s.Redact(mime)
	back, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(got, "\r\n", ""))
	if err != nil || strings.Contains(string(back), "tok-") || !strings.Contains(got, "\r\n") || strings.Index(got, "\r\n") != 76 {
		t.Fatalf("wrapped base64: %v %q", err, back)
	}
}

// TestRedactBase64InResult: an image's data and a resource's blob in a
// tool result are looked into; a clean blob is left byte for byte.
func TestRedactBase64InResult(t *testing.T) {
	s := newTestSession(t, nil, nil, []Secret{{Name: "svc.env.TOKEN", Value: "tok-9f8e7d6c5b4a"}})
	img := make([]byte, 3000)
	_, _ = rand.Read(img)
	clean := json.RawMessage(`{"content":[{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(img) + `"}]}`)
	if got := s.RedactJSON(clean); string(got) != string(clean) {
		t.Fatal("a clean image was changed")
	}
	copy(img[1001:], "tok-9f8e7d6c5b4a")
	blob := base64.StdEncoding.EncodeToString(img)
	raw := json.RawMessage(`{"content":[{"type":"image","data":"` + blob + `"},{"type":"resource","resource":{"uri":"file:///x","blob":"` + blob + `"}}]}`)
	var r struct {
		Content []struct {
			Data     []byte
			Resource struct{ Blob []byte }
		}
	}
	if err := json.Unmarshal(s.RedactJSON(raw), &r); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{r.Content[0].Data, r.Content[1].Resource.Blob} {
		if strings.Contains(string(b), "tok-9f8e7d6c5b4a") || !strings.Contains(string(b), "<secret:svc.env.TOKEN>") {
			t.Fatal("the secret inside the blob was not hidden")
		}
	}
}

// TestTokenValueNeverComesBack: a value the session gave a token for is
// hidden wherever it comes back, also where its pattern no longer
// matches (digits glued to a phone number), in base64 and in a URI.
func TestTokenValueNeverComesBack(t *testing.T) {
	s := newTestSession(t, []string{"phone", "email"}, nil, nil)
	if got := s.Redact("call +1 415 555 0132"); got != "call <phone_1>" {
		t.Fatalf("got %q", got)
	}
	s.Redact("mail dana.reyes@example.org")
	args, _ := s.Restore(json.RawMessage(`{"content":"<phone_1>5"}`))
	var a struct{ Content string }
	_ = json.Unmarshal(args, &a)
	if a.Content != "+1 415 555 01325" {
		t.Fatalf("restored %q", a.Content)
	}
	for _, back := range []string{
		a.Content,
		base64.StdEncoding.EncodeToString([]byte("x" + a.Content)),
		"file:///tmp/" + strings.ReplaceAll(a.Content, " ", "%20"),
		"file:///tmp/dana.reyes%40example.org.txt",
	} {
		if got := s.Redact(back); strings.Contains(got, "555") || strings.Contains(got, "dana") {
			t.Errorf("%q came back as %q", back, got)
		}
	}
}

// TestNeedlesMany: with more values than are looked for one by one, the
// one-pass search finds each, longer ones before their prefixes.
func TestNeedlesMany(t *testing.T) {
	var list []needle
	for _, v := range []string{"alpha-123", "alpha-1234", "bravo-xyz", "charlie-77", "delta!", "echo-echo", "foxtrot-0", "golf-golf", "hotel-99", "india-42"} {
		list = append(list, needle{value: v, secret: v})
	}
	n := newNeedles(list)
	var got []string
	n.each("x alpha-1234 alpha-123 delta!india-42 hotel-9", func(s, e int, nd *needle) bool {
		got = append(got, nd.value)
		return true
	})
	if strings.Join(got, ",") != "alpha-1234,alpha-123,delta!,india-42" {
		t.Fatalf("found %v", got)
	}
}

// BenchmarkRedactLargeBase64 is a 64 MiB tool result holding one clean
// base64 blob (48 MiB of random bytes), with the default redaction
// (secrets only) and with every kind of personal data.
func BenchmarkRedactLargeBase64(b *testing.B) {
	data := make([]byte, 48<<20)
	_, _ = rand.Read(data)
	raw := json.RawMessage(`{"content":[{"type":"resource","resource":{"uri":"file:///big.bin","blob":"` + base64.StdEncoding.EncodeToString(data) + `"}}]}`)
	for _, kinds := range [][]string{nil, {"all"}} {
		name := "secrets"
		if kinds != nil {
			name = "all"
		}
		b.Run(name, func(b *testing.B) {
			r, _ := NewRedactor(kinds, nil, []Secret{{Name: "a.env.T", Value: "sekrit-value"}, {Name: "a.env.U", Value: "another-secret"}})
			s := New(Config{Redactor: r}).NewSession()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if out := s.RedactJSON(raw); len(out) != len(raw) {
					b.Fatal("changed")
				}
			}
		})
	}
}

// BenchmarkRedactProse is 8 MiB of prose (a result, then the same text as
// output): every word of 8 letters or more is a base64 run to look into.
func BenchmarkRedactProse(b *testing.B) {
	line := "The quarterly statement for customer 4411 covers invoices, reconciliations and outstanding balances; contact accounting department representatives tomorrow.\n"
	text := strings.Repeat(line, (8<<20)/len(line))
	raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	for _, kinds := range [][]string{nil, {"all"}} {
		name := "secrets"
		if kinds != nil {
			name = "all"
		}
		b.Run(name, func(b *testing.B) {
			r, _ := NewRedactor(kinds, nil, []Secret{{Name: "a.env.T", Value: "sekrit-value"}})
			s := New(Config{Redactor: r}).NewSession()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				s.RedactJSON(raw)
				s.Redact(text)
			}
		})
	}
}

// TestRedactBinaryKeepsOrder: in bytes that are not text, secrets found
// one after the other (the longer first) are replaced in place.
func TestRedactBinaryKeepsOrder(t *testing.T) {
	s := newTestSession(t, nil, nil, []Secret{{Name: "a.env.SHORT", Value: "short-1"}, {Name: "a.env.LONG", Value: "longer-secret-2"}})
	got := s.Redact("\xff short-1 \xfe longer-secret-2 \xfd")
	if got != "\xff <secret:a.env.SHORT> \xfe <secret:a.env.LONG> \xfd" {
		t.Fatalf("got %q", got)
	}
}
