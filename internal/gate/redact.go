package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Secret is a value that must never reach the model: the value of an
// upstream's env variable or HTTP header. Name says whose it is
// ("github.env.GITHUB_TOKEN"); the model sees <secret:NAME>.
type Secret struct {
	Name  string
	Value string
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
			d := builtins()[k]
			d.prose = true
			r.detectors = append(r.detectors, d)
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
			r.secrets = append(r.secrets, s)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i].Value) > len(r.secrets[j].Value) })
	return r, nil
}

// hides reports whether anything can be hidden: secrets, or kinds (and
// so values with tokens).
func (r *Redactor) hides() bool { return r != nil && len(r.secrets)+len(r.detectors) > 0 }

// Active reports whether personal data is looked for (secrets are always).
func (r *Redactor) Active() bool { return r != nil && len(r.detectors) > 0 }

// span is one match to replace.
type span struct {
	start, end int
	kind       string // a kind of personal data; "" for a secret or a made replacement
	secret     string // the secret's name
	value      string // the real value a token stands for
	repl       string // a replacement made already (a base64 run redacted inside)
}

// finder collects non-overlapping spans in the order they are found: an
// earlier one wins over a later one it overlaps.
type finder struct {
	spans []span
	first bool // only whether there is a match matters: stop at the first
}

func (f *finder) taken(s, e int) bool {
	for _, o := range f.spans {
		if s < o.end && o.start < e {
			return true
		}
	}
	return false
}

// add keeps sp unless it overlaps a span found before, and reports
// whether to go on looking.
func (f *finder) add(sp span) bool {
	if !f.taken(sp.start, sp.end) {
		f.spans = append(f.spans, sp)
	}
	return !f.done()
}

func (f *finder) done() bool { return f.first && len(f.spans) > 0 }

// find returns the non-overlapping matches in text, in order: the
// secrets and the values the session has tokens for, then base64 runs
// whose bytes hold something to hide, then the kinds in their order,
// then what shows once JSON or percent escapes are undone (depth says
// how many layers of encoding are still looked through). In bytes that
// are not text only exact values are looked for. With first set
// it stops at the first match, and positions of matches found through an
// escape are not worked out.
func (s *Session) find(text string, depth int, first bool) []span {
	f := &finder{first: first}
	s.collect(f, text, depth)
	if len(f.spans) > 1 {
		sort.Slice(f.spans, func(i, j int) bool { return f.spans[i].start < f.spans[j].start })
	}
	return f.spans
}

// collect adds the matches of find to f.
func (s *Session) collect(f *finder, text string, depth int) {
	nd := s.needles()
	nd.each(text, func(st, e int, n *needle) bool {
		return f.add(span{start: st, end: e, kind: n.kind, secret: n.secret, value: n.value})
	})
	// Patterns, escapes and base64 are text's: in bytes that are not text
	// (an image) they would only find noise, so only exact values are
	// looked for there.
	if f.done() || !textual(text) {
		return
	}
	var blobs [][2]int
	if depth > 0 {
		blobs = s.findBase64(f, text, depth, nd.maxLen)
	}
	if r := s.g.redactor; len(r.detectors) > 0 && !f.done() {
		st := statsOf(text)
		for _, d := range r.detectors {
			if (d.needs == nil || d.needs(st)) && !findPattern(f, text, d, blobs) {
				return
			}
		}
	}
	if depth > 0 {
		s.findEscaped(f, text, depth)
	}
}

// findEscaped adds what shows in text once JSON or percent escapes are
// undone (mapped back to the escaped text, unless only the first match
// is asked for).
func (s *Session) findEscaped(f *finder, text string, depth int) {
	for _, dec := range decoders {
		if f.done() {
			return
		}
		w, ok := dec(text, !f.first)
		if !ok {
			continue
		}
		for _, sp := range s.find(w.text, depth-1, f.first) {
			if !f.first {
				sp.start, sp.end = w.start(sp.start), w.end(sp.end)
			}
			if !f.add(sp) {
				return
			}
		}
	}
}

// findPattern adds the matches of one detector, and reports whether to
// go on looking. A built-in kind is not looked for inside blobs (long
// base64 runs, looked into by findBase64 instead): a phone number or a
// card is never written inside one, and the patterns are slow there.
func findPattern(f *finder, text string, d detector, blobs [][2]int) bool {
	from := 0
	for i := 0; i <= len(blobs); i++ {
		to := len(text)
		if d.prose && i < len(blobs) {
			to = blobs[i][0]
		}
		for _, m := range d.re.FindAllStringIndex(text[from:to], -1) {
			a, b := from+m[0], from+m[1]
			if d.valid != nil && !d.valid(text[a:b]) {
				continue
			}
			if !f.add(span{start: a, end: b, kind: d.kind, value: text[a:b]}) {
				return false
			}
		}
		if !d.prose || i == len(blobs) {
			break
		}
		from = blobs[i][1]
	}
	return true
}

// minBlob is the length from which a base64 run is a blob, not a word.
const minBlob = 1024

// findBase64 adds the base64 runs of text whose bytes hold something to
// hide, each with its redacted re-encoding, and returns where the blobs
// are. A run is first looked at a piece at a time, so a large clean one
// is never decoded whole.
func (s *Session) findBase64(f *finder, text string, depth, longest int) (blobs [][2]int) {
	overlap := max(4096, longest)
	scratch := make([]byte, 0, 768)
	base64Runs(text, func(run b64Run) bool {
		if run.end-run.start >= minBlob {
			blobs = append(blobs, [2]int{run.start, run.end})
		}
		if f.taken(run.start, run.end) {
			return true
		}
		if !run.anyChunk(text, overlap, scratch, func(b string) bool { return len(s.find(b, depth-1, true)) > 0 }) {
			return true
		}
		if f.first {
			return f.add(span{start: run.start, end: run.end})
		}
		data := string(run.decode(text))
		red := s.redactDepth(data, depth-1)
		if red == data {
			return true
		}
		return f.add(span{start: run.start, end: run.end, repl: run.encode([]byte(red), text)})
	})
	return blobs
}

// textual reports whether s is UTF-8 text, but for a rune cut at either
// end (a piece of a larger decoded run).
func textual(s string) bool {
	for i := 0; i < 3 && len(s) > 0 && s[0]&0xC0 == 0x80; i++ {
		s = s[1:]
	}
	for i := 1; i <= 3 && i <= len(s); i++ {
		if s[len(s)-i]&0xC0 != 0x80 {
			if !utf8.FullRuneInString(s[len(s)-i:]) {
				s = s[:len(s)-i]
			}
			break
		}
	}
	return utf8.ValidString(s)
}

// needles are the exact values the session hides: the secrets and the
// values it gave tokens for, made again when a token was added.
func (s *Session) needles() *needles {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ndl != nil && s.ndlTokens == len(s.byToken) {
		return s.ndl
	}
	var list []needle
	for _, sec := range s.g.redactor.secrets {
		list = append(list, needle{value: sec.Value, secret: sec.Name})
	}
	keys := slices.Sorted(maps.Keys(s.byValue)) // the same order every time
	for _, key := range keys {
		kind, value, _ := strings.Cut(key, "\x00")
		if len(value) >= minSecret {
			list = append(list, needle{value: value, kind: kind})
		}
	}
	s.ndl, s.ndlTokens = newNeedles(list), len(s.byToken)
	return s.ndl
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
	lastCell *ledger         // the calls of the run started last (ledger.go)

	ndl       *needles // the exact values hidden, made for ndlTokens tokens
	ndlTokens int
}

// Redact returns text with every secret replaced by <secret:NAME> and
// every match of the redactor's kinds by its session token (<email_1>):
// the same value always gets the same token within the session. Values
// are found as written and in the forms they take on the way back (see
// forms.go): JSON-escaped, percent-encoded, inside base64.
func (s *Session) Redact(text string) string { return s.redactDepth(text, maxDepth) }

// redactDepth is Redact looking through depth layers of encoding.
func (s *Session) redactDepth(text string, depth int) string {
	if !s.g.redactor.hides() || text == "" {
		return text
	}
	// A match that overlapped one taken before it can hide another match
	// inside the same digits; once the first is a token, that one shows.
	// So redact again until nothing changes (a pass finds nothing new
	// quickly, and the loop is bounded).
	for range 4 {
		next := s.redactOnce(text, depth)
		if next == text {
			break
		}
		text = next
	}
	return text
}

// redactOnce replaces the matches find sees in text.
func (s *Session) redactOnce(text string, depth int) string {
	spans := s.find(text, depth, false)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, sp := range spans {
		b.WriteString(text[last:sp.start])
		switch {
		case sp.repl != "":
			b.WriteString(sp.repl)
		case sp.secret != "":
			b.WriteString("<secret:" + sp.secret + ">")
		default:
			b.WriteString(s.token(sp.kind, sp.value))
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

// maskRE finds what Redact leaves in place of a value: a session token
// (<email_3>) or a secret's name (<secret:NAME>).
var maskRE = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_]*)_[0-9]+>|<secret:[^<>]*>`)

// Masked is redacted text with each token shown as its kind alone
// (<email>) and each secret as <secret>: what was hidden, not which value
// it was, so that text kept beyond the session (a result's shape) holds
// no token another session could be handed.
func Masked(text string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	return maskRE.ReplaceAllStringFunc(text, func(t string) string {
		if strings.HasPrefix(t, "<secret:") {
			return "<secret>"
		}
		return "<" + maskRE.FindStringSubmatch(t)[1] + ">"
	})
}

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

// RestoreFor is [Session.Restore] for what goes to server: it keeps the
// sandbox's tokens when the server is in [Config.KeepTokens].
func (s *Session) RestoreFor(server string, params json.RawMessage) json.RawMessage {
	if s.g.cfg.KeepTokens[server] {
		return params
	}
	out, _ := s.Restore(params)
	return out
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
	if !r.hides() || len(raw) == 0 || !s.mayMatch(raw) {
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

// mayMatch is a quick look at raw JSON: false when nothing to hide can
// be in it, in any form. The JSON's own escapes are one more layer than
// its strings have once decoded. Raw is read in place: a 64 MiB result is
// not copied to be looked at.
func (s *Session) mayMatch(raw []byte) bool {
	return len(s.find(unsafe.String(unsafe.SliceData(raw), len(raw)), maxDepth+1, true)) > 0
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
