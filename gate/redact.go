package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// Secret is a value that must never reach the model: the value of an
// upstream's env variable or HTTP header. Name says whose it is
// ("github.env.GITHUB_TOKEN"); the model sees <secret:NAME>.
type Secret struct {
	Name  string
	Value string

	escaped string // Value as JSON writes it inside a string
}

// minSecret is the shortest env or header value hidden as a secret:
// shorter values ("1", "true", "info") are settings, and hiding every
// occurrence of them would wreck the output.
const minSecret = 6

// Redactor holds what is hidden from the model: the kinds of personal
// data asked for, custom patterns, and the secrets. It is shared by all
// sessions; the tokens are per [Session].
type Redactor struct {
	detectors []detector
	secrets   []Secret // longest first, so that a value containing another is hidden whole
}

// NewRedactor returns a redactor for the built-in kinds named (see
// [Kinds]; "all" names every one), custom patterns (name -> regexp) and
// secrets.
func NewRedactor(kinds []string, custom map[string]string, secrets []Secret) (*Redactor, error) {
	r := &Redactor{}
	want := map[string]bool{}
	for _, k := range kinds {
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case k == "":
		case k == "all":
			for _, b := range Kinds {
				want[b] = true
			}
		case slices.Contains(Kinds, k):
			want[k] = true
		default:
			return nil, fmt.Errorf("%q is not a kind of personal data codebridge knows: use %s, or all (custom patterns go in the config's \"redact\" object)", k, strings.Join(Kinds, ", "))
		}
	}
	for _, k := range Kinds {
		if want[k] {
			r.detectors = append(r.detectors, builtins()[k])
		}
	}
	names := make([]string, 0, len(custom))
	for n := range custom {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d, err := customDetector(n, custom[n])
		if err != nil {
			return nil, err
		}
		r.detectors = append(r.detectors, d)
	}
	for _, s := range secrets {
		if len(s.Value) >= minSecret {
			q, _ := json.Marshal(s.Value)
			s.escaped = string(q[1 : len(q)-1])
			r.secrets = append(r.secrets, s)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i].Value) > len(r.secrets[j].Value) })
	return r, nil
}

// Active reports whether personal data is looked for (secrets are always).
func (r *Redactor) Active() bool { return r != nil && len(r.detectors) > 0 }

// span is one match to replace.
type span struct {
	start, end int
	kind       string // "" for a secret
	secret     string // the secret's name
}

// find returns the non-overlapping matches in text, in order: secrets
// first, then the kinds in their order.
func (r *Redactor) find(text string) []span {
	var spans []span
	taken := func(s, e int) bool {
		for _, o := range spans {
			if s < o.end && o.start < e {
				return true
			}
		}
		return false
	}
	for _, sec := range r.secrets {
		for off := 0; ; {
			i := strings.Index(text[off:], sec.Value)
			if i < 0 {
				break
			}
			s, e := off+i, off+i+len(sec.Value)
			if !taken(s, e) {
				spans = append(spans, span{start: s, end: e, secret: sec.Name})
			}
			off = e
		}
	}
	var st textStats
	if len(r.detectors) > 0 {
		st = statsOf(text)
	}
	for _, d := range r.detectors {
		if d.needs != nil && !d.needs(st) {
			continue
		}
		for _, m := range d.re.FindAllStringIndex(text, -1) {
			if taken(m[0], m[1]) || (d.valid != nil && !d.valid(text[m[0]:m[1]])) {
				continue
			}
			spans = append(spans, span{start: m[0], end: m[1], kind: d.kind})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	return spans
}

// Session is the gate's state for one sandbox session: its id, the tokens
// it handed out (in memory only) and the approvals given for the session.
type Session struct {
	ID string
	// Principal is who the session acts for ("local", "token:alice"),
	// written on each of its audit records.
	Principal string
	g         *Gate

	mu       sync.Mutex
	byValue  map[string]string // kind + "\x00" + value -> token
	byToken  map[string]string // token -> value
	counts   map[string]int
	approved map[string]bool // server + "\x00" + tool approved for the session
}

// Redact returns text with every secret replaced by <secret:NAME> and
// every match of the redactor's kinds by its session token (<email_1>):
// the same value always gets the same token within the session.
func (s *Session) Redact(text string) string {
	r := s.g.redactor
	if r == nil || text == "" {
		return text
	}
	// A match that overlapped one taken before it can hide another match
	// inside the same digits; once the first is a token, that one shows.
	// So redact again until nothing changes (a pass finds nothing new
	// quickly, and the loop is bounded).
	for range 4 {
		next := s.redactOnce(r, text)
		if next == text {
			break
		}
		text = next
	}
	return text
}

// redactOnce replaces the matches find sees in text.
func (s *Session) redactOnce(r *Redactor, text string) string {
	spans := r.find(text)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, sp := range spans {
		b.WriteString(text[last:sp.start])
		if sp.kind == "" {
			b.WriteString("<secret:" + sp.secret + ">")
		} else {
			b.WriteString(s.token(sp.kind, text[sp.start:sp.end]))
		}
		last = sp.end
	}
	b.WriteString(text[last:])
	return b.String()
}

func (s *Session) token(kind, value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := kind + "\x00" + value
	if t, ok := s.byValue[key]; ok {
		return t
	}
	s.counts[kind]++
	t := fmt.Sprintf("<%s_%d>", kind, s.counts[kind])
	s.byValue[key], s.byToken[t] = t, value
	return t
}

// tokenRE finds tokens in argument strings.
var tokenRE = regexp.MustCompile(`<[A-Za-z][A-Za-z0-9_]*_[0-9]+>`)

// Restore puts the real values back where params (a JSON request) holds
// tokens this session handed out, in every string of it, and reports
// whether it changed anything. Unknown tokens, and secrets, stay as they
// are: the sandbox cannot name a value it was never shown.
func (s *Session) Restore(params json.RawMessage) (json.RawMessage, bool) {
	s.mu.Lock()
	n := len(s.byToken)
	s.mu.Unlock()
	if n == 0 || !containsTokenStart(params) {
		return params, false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber() // numbers pass through exactly
	if err := dec.Decode(&v); err != nil {
		return params, false
	}
	changed := false
	v = s.restoreValue(v, &changed)
	if !changed {
		return params, false
	}
	out, err := marshal(v)
	if err != nil {
		return params, false
	}
	return out, true
}

// containsTokenStart is a fast check for '<' as JSON may spell it.
func containsTokenStart(b []byte) bool {
	return bytes.IndexByte(b, '<') >= 0 || bytes.Contains(b, []byte(`\u003c`))
}

func (s *Session) restoreValue(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		out := tokenRE.ReplaceAllStringFunc(x, func(t string) string {
			s.mu.Lock()
			defer s.mu.Unlock()
			if real, ok := s.byToken[t]; ok {
				*changed = true
				return real
			}
			return t
		})
		return out
	case []any:
		for i := range x {
			x[i] = s.restoreValue(x[i], changed)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = s.restoreValue(e, changed)
		}
	}
	return v
}

// RedactJSON redacts every string (and object key) of a JSON value, such
// as a tool's result on its way to the sandbox. A value with nothing to
// hide is returned as it is, unparsed.
func (s *Session) RedactJSON(raw json.RawMessage) json.RawMessage {
	r := s.g.redactor
	if r == nil || len(raw) == 0 || !r.mayMatch(raw) {
		return raw
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(s.Redact(string(raw)))
	}
	out, err := marshal(s.redactValue(v))
	if err != nil {
		return raw
	}
	return out
}

// marshal encodes v as compact JSON, leaving <, > and & as they are.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// mayMatch is a quick look at raw JSON: false when no secret (as written,
// or JSON-escaped) and no pattern can be in it.
func (r *Redactor) mayMatch(raw []byte) bool {
	for _, sec := range r.secrets {
		if bytes.Contains(raw, []byte(sec.Value)) || bytes.Contains(raw, []byte(sec.escaped)) {
			return true
		}
	}
	if len(r.detectors) == 0 {
		return false
	}
	// Read raw in place: a 64 MiB result is not copied to be looked at.
	return len(r.find(unsafe.String(unsafe.SliceData(raw), len(raw)))) > 0 || bytes.IndexByte(raw, '\\') >= 0
}

func (s *Session) redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return s.Redact(x)
	case []any:
		for i := range x {
			x[i] = s.redactValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.Redact(k)] = s.redactValue(e)
		}
		return out
	}
	return v
}
