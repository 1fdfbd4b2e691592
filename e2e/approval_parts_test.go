package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalParts (issue 30): an ordinary asyncio.gather of eight calls
// of one server's tool and a ninth of another server's tool, each under
// its own "ask" rule, is more than one question lists. Every call that
// runs must have been named, with its server, tool, arguments and rule,
// in a question the user answered: a call allowed by the user's answer
// in a question that listed it, a call allowed by an earlier "for this
// cell" or "for the session" in a question that named its tool. The cell
// is answered "once", "cell" and "session" (and "session" for everything
// but the ninth, which is declined: the session answer must not let it
// run later), on both ways of asking: elicitation in the call (protocol
// 2025-11-25) and input requests (2026-07-28). Main's gate asked one
// question naming only the first server, said its rule held "for each",
// and ran the ninth.
func TestApprovalParts(t *testing.T) {
	needEnv(t)
	for _, style := range []struct {
		name string
		opts *mcp.ClientSessionOptions
	}{{"elicitation", oldProtocol}, {"input-requests", nil}} {
		t.Run(style.name, func(t *testing.T) { approvalParts(t, style.opts) })
	}
}

// hiddenGather is the attacker's cell: eight harmless calls and, ninth,
// a call of another server that the eight would hide on a list of eight.
const hiddenGather = `import asyncio
r = await asyncio.gather(*(mcp_calm.echo(message=f"m{i}") for i in range(8)), mcp_wipe.hit(x="HIDDEN-DROP-ALL-TABLES"), return_exceptions=True)
print("RESULTS", [type(x).__name__ for x in r])
`

// judge is an MCP client's user who answers each question by what it
// says, and keeps every question with its answer.
type judge struct {
	mu      sync.Mutex
	decide  func(q string) string // "once", "cell", "session" or "decline"
	answers []answeredQuestion
}

// answeredQuestion is one question the user was asked and the answer.
type answeredQuestion struct {
	text   string
	answer string
	calls  []namedCall
}

// namedCall is one call as a question names it.
type namedCall struct {
	server, tool, args, rule string
}

func (j *judge) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	q := req.Params.Message
	a := j.decide(q)
	j.answers = append(j.answers, answeredQuestion{text: q, answer: a, calls: namedCalls(q)})
	if a == "decline" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return allow(a), nil
}

// set sets how the next questions are answered and returns those asked
// since the last call.
func (j *judge) set(decide func(string) string) []answeredQuestion {
	j.mu.Lock()
	defer j.mu.Unlock()
	asked := j.answers
	j.answers, j.decide = nil, decide
	return asked
}

func always(answer string) func(string) string { return func(string) string { return answer } }

var (
	listedCall = regexp.MustCompile(`^\d+\. the tool ([^.\s]+)\.(\S+)(?: \(line \d+\))? with$`)
	singleCall = regexp.MustCompile(`wants to call the tool ([^.\s]+)\.(\S+) with$`)
	sharedRule = regexp.MustCompile(`^\((.*) for each\)\.$`)
	ownRule    = regexp.MustCompile(`^\((.*)\)\.?$`)
)

// namedCalls reads the calls a question names, each with the arguments
// on the line after it and its rule: on the line after those, or the one
// rule a batch's question says holds for each.
func namedCalls(q string) []namedCall {
	lines := strings.Split(q, "\n")
	var calls []namedCall
	shared := ""
	for i, l := range lines {
		if m := sharedRule.FindStringSubmatch(l); m != nil {
			shared = m[1]
			continue
		}
		m := listedCall.FindStringSubmatch(l)
		if m == nil {
			m = singleCall.FindStringSubmatch(l)
		}
		if m == nil || i+1 >= len(lines) {
			continue
		}
		c := namedCall{server: m[1], tool: m[2], args: lines[i+1]}
		if i+2 < len(lines) && !sharedRule.MatchString(lines[i+2]) {
			if r := ownRule.FindStringSubmatch(lines[i+2]); r != nil {
				c.rule = r[1]
			}
		}
		calls = append(calls, c)
	}
	for i := range calls {
		if calls[i].rule == "" {
			calls[i].rule = shared
		}
	}
	return calls
}

// auditedCall is a call line of the audit log.
type auditedCall struct {
	Event    string          `json:"event"`
	Server   string          `json:"server"`
	Name     string          `json:"name"`
	Decision string          `json:"decision"`
	By       string          `json:"by"`
	Rule     string          `json:"rule"`
	Args     json.RawMessage `json:"args"`
	Outcome  string          `json:"outcome"`
}

// auditedCalls reads the call lines of the audit log after the first
// skip lines; it returns them and the number of lines read.
func auditedCalls(t *testing.T, path string, skip int) ([]auditedCall, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var out []auditedCall
	for _, l := range lines[skip:] {
		var r auditedCall
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if r.Event == "call" {
			out = append(out, r)
		}
	}
	return out, len(lines)
}

// shownIn reports whether call c was named, with its arguments and its
// rule, in a question answered "once", "cell" or "session"; scopeOnly,
// when set, asks instead whether its tool was named (with its rule) in a
// question answered with that scope.
func shownIn(c auditedCall, asked []answeredQuestion, scopeOnly string) bool {
	var args bytes.Buffer
	if err := json.Compact(&args, c.Args); err != nil {
		return false
	}
	for _, q := range asked {
		if q.answer == "decline" || (scopeOnly != "" && q.answer != scopeOnly) {
			continue
		}
		for _, n := range q.calls {
			if n.server == c.Server && n.tool == c.Name && n.rule == c.Rule && (scopeOnly != "" || n.args == args.String()) {
				return true
			}
		}
	}
	return false
}

// checkShown fails the test for each call that ran without having been
// shown in an answered question: calls (the audit's) of one step, asked
// the questions of the same cell (for "cell") or of the session so far.
func checkShown(t *testing.T, step string, calls []auditedCall, cell, session []answeredQuestion) (ran []string) {
	t.Helper()
	for _, c := range calls {
		if c.Decision != "ask" || c.Outcome == "denied" {
			continue
		}
		ran = append(ran, c.Server+"."+c.Name+string(c.Args))
		ok := false
		switch c.By {
		case "user":
			ok = shownIn(c, cell, "")
		case "cell":
			ok = shownIn(c, cell, "cell")
		case "session":
			ok = shownIn(c, session, "session")
		}
		if !ok {
			t.Errorf("%s: %s.%s %s ran (decided by %s) though no question answered %q named it with its rule (%s); the questions:\n%s",
				step, c.Server, c.Name, c.Args, c.By, c.By, c.Rule, questionsText(cell))
		}
	}
	return ran
}

func questionsText(qs []answeredQuestion) string {
	var b strings.Builder
	for i, q := range qs {
		fmt.Fprintf(&b, "--- question %d, answered %s:\n%s\n", i+1, q.answer, q.text)
	}
	return b.String()
}

func approvalParts(t *testing.T, opts *mcp.ClientSessionOptions) {
	calm, wipe := stub("--name=calm"), stub("--name=wipe", "--tool=hit")
	h, audit := gateHome(t, map[string]any{
		"calm": withTools(calm, map[string][]string{"ask": {"echo"}}),
		"wipe": withTools(wipe, map[string][]string{"ask": {"hit"}}),
	}, nil)
	user := &judge{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-parts", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.elicit})
	b := startBridgeClient(t, h, client, opts, "CODEBRIDGE_AUDIT="+audit, "CODEBRIDGE_AUDIT_ARGS=true")
	if v := b.cs.InitializeResult().ProtocolVersion; (opts == nil) != (v >= "2026-07-28") {
		t.Fatalf("the client speaks protocol %s", v)
	}
	var session []answeredQuestion // every question of the session so far
	seen := 0
	// step runs code, its questions answered by answer, and checks that
	// every call that ran was shown; it returns the output, the calls that
	// ran and the questions asked.
	step := func(name, code string, answer func(string) string) (string, []string, []answeredQuestion) {
		t.Helper()
		user.set(answer)
		out := b.run(code).text // a denied call raises: the audit says what ran
		asked := user.set(nil)
		session = append(session, asked...)
		var calls []auditedCall
		calls, seen = auditedCalls(t, audit, seen)
		return out, checkShown(t, name, calls, asked, session), asked
	}
	allStr := "RESULTS ['str', 'str', 'str', 'str', 'str', 'str', 'str', 'str', 'str']"

	// Allowed once: all nine run, and each was named.
	out, ran, _ := step("once", hiddenGather, always("once"))
	mustContain(t, out, allStr)
	if len(ran) != 9 {
		t.Errorf("once: %d calls ran: %q", len(ran), ran)
	}

	// For this cell: a later call of the ninth's tool passes only if its
	// tool was named in a question answered "cell".
	out, ran, _ = step("cell", hiddenGather+`print("LATER", await mcp_wipe.hit(x="later"))`, always("cell"))
	mustContain(t, out, allStr, "LATER hit is here")
	if len(ran) != 10 {
		t.Errorf("cell: %d calls ran: %q", len(ran), ran)
	}

	// For the session, but the question naming the ninth declined: it
	// does not run, in this cell or (asked again, declined again) the
	// next; the eight do.
	wipeDeclined := func(q string) string { // by the calls it names, not the code it shows
		for _, c := range namedCalls(q) {
			if c.server == "wipe" {
				return "decline"
			}
		}
		return "session"
	}
	out, ran, _ = step("session, the ninth declined", hiddenGather, wipeDeclined)
	mustContain(t, out, "RESULTS ['str', 'str', 'str', 'str', 'str', 'str', 'str', 'str', 'PermissionDenied']")
	if len(ran) != 8 {
		t.Errorf("session, the ninth declined: %d calls ran: %q", len(ran), ran)
	}
	out, ran, asked := step("the next cell", `print("AGAIN", await mcp_wipe.hit(x="again"))`, wipeDeclined)
	if len(ran) != 0 || len(asked) != 1 || len(asked[0].calls) != 1 || asked[0].calls[0].tool != "hit" {
		t.Errorf("the next cell: ran %q, asked %d questions (%s)", ran, len(asked), out)
	}

	// For the session, everything: the next cell's call of the ninth's
	// tool passes without a question, as one named it.
	out, _, _ = step("session", hiddenGather, always("session"))
	mustContain(t, out, allStr)
	out, ran, asked = step("session, the next cell", `print("AGAIN", await mcp_wipe.hit(x="again"))`, always("decline"))
	mustContain(t, out, "AGAIN hit is here")
	if len(ran) != 1 || len(asked) != 0 {
		t.Errorf("session, the next cell: ran %q, asked %d questions", ran, len(asked))
	}
}
