package gate

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
)

// DefaultApprovalTimeout is how long an "ask" waits for the user when
// [Config.ApprovalTimeout] is zero.
const DefaultApprovalTimeout = 2 * time.Minute

// Config configures a [Gate]. The zero value allows everything, hides
// nothing, records nothing.
type Config struct {
	Policy Policy
	// Redactor hides secrets and personal data; nil hides nothing.
	Redactor *Redactor
	// KeepTokens names the servers whose arguments keep the sandbox's
	// tokens: the real values are never put back for them.
	KeepTokens map[string]bool
	// Audit receives a record per call and per run; nil records nothing.
	Audit *AuditLog
	// Tracing makes the spans; nil makes none.
	Tracing *Tracing
	// ApprovalTimeout bounds the wait for the user's answer to an ask.
	// Zero means [DefaultApprovalTimeout].
	ApprovalTimeout time.Duration
	// Log receives diagnostics (a failed audit write). Nil:
	// slog.Default(), as it is when the gate logs (a program that sets
	// its default log after making the gate logs there).
	Log *slog.Logger
}

// Gate is the layer every targeted request passes (see the package doc).
// It is shared by the sandbox sessions; each has its own [Session].
type Gate struct {
	cfg      Config
	policy   *Policy
	redactor *Redactor
	log      *slog.Logger
	ids      atomic.Uint64
}

// New returns a gate.
func New(cfg Config) *Gate {
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = DefaultApprovalTimeout
	}
	return &Gate{cfg: cfg, policy: &cfg.Policy, redactor: cfg.Redactor, log: cfg.Log}
}

// logger is the gate's log: Config.Log, or slog.Default() as it is now.
func (g *Gate) logger() *slog.Logger {
	if g.log != nil {
		return g.log
	}
	return slog.Default()
}

// Policy is the gate's policy (for filtering listings).
func (g *Gate) Policy() *Policy { return g.policy }

// NewSession starts the gate's state for one sandbox session of the
// local user.
func (g *Gate) NewSession() *Session { return g.NewSessionOf("local") }

// NewSessionOf starts the gate's state for one sandbox session of a
// principal (principal.Principal.String), named on its audit records.
func (g *Gate) NewSessionOf(principal string) *Session {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Session{ID: hex.EncodeToString(b[:]), Principal: principal, g: g,
		byValue: map[string]string{}, byToken: map[string]string{}, counts: map[string]int{}, approved: map[string]bool{}}
}

// Request is one request of the sandbox, as the gate sees it.
type Request struct {
	Target protocol.Target
	// Params are the request's raw parameters; tokens in them are put back.
	Params json.RawMessage
	// Canonical says Params are already in the gate's canonical form
	// ([Canonical]'s output): they are not parsed again.
	Canonical bool
	// Arguments are the "arguments" member of canonical Params, when the
	// caller decoded them; nil: the gate looks for them in Params.
	Arguments json.RawMessage
	// Annotations are the tool's own (nil if none or not a tool).
	Annotations *mcp.ToolAnnotations
	// Unlisted says the request names a tool its server does not list
	// under exactly that name: it is denied whatever the rules say.
	Unlisted bool
	// Ask asks the user; nil cannot ask.
	Ask Asker
	// Run is the run_python call whose cell made the request ([Session.StartRun]);
	// nil when none is known (a request made outside a cell).
	Run *Run
	// Line is the line of the cell's code that made the request, as the
	// runtime says (0: unknown); a question shows the code around it.
	Line int
	// Batch marks a request the runtime sent with others (approve.go).
	Batch Batch
}

// DeniedError is the error of a request the gate did not let through. Its
// message names the rule, and what to change to allow it; errors.Is finds
// which of ErrPolicy, ErrNotApproved, ErrUnlisted or ErrBadParams denied it.
type DeniedError struct {
	Target protocol.Target
	Rule   string
	Why    string
	// Cause is what denied it: ErrPolicy, ErrNotApproved, ErrUnlisted or
	// ErrBadParams.
	Cause error
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("%s %s.%s was denied: %s (%s)", e.Target.Kind, e.Target.Server, e.Target.Name, e.Why, e.Rule)
}

// Unwrap returns what denied the request.
func (e *DeniedError) Unwrap() error { return e.Cause }

// What denied a request ([DeniedError.Cause]).
var (
	// ErrPolicy: a rule of the policy.
	ErrPolicy = errors.New("the policy does not allow it")
	// ErrNotApproved: the request needed the user's approval and did not
	// get it (declined, no answer in time, or a client that cannot ask).
	ErrNotApproved = errors.New("the user did not approve it")
	// ErrUnlisted: the request names a tool its server does not list.
	ErrUnlisted = errors.New("its server lists no such tool")
	// ErrBadParams: its parameters are not one unambiguous JSON value.
	ErrBadParams = errors.New("its parameters are not one unambiguous JSON value")
)

// deniedBy is what denied a request, from who decided ([Gate.decide],
// [Session.approve]).
func deniedBy(by string) error {
	switch by {
	case "parameters":
		return ErrBadParams
	case "listing":
		return ErrUnlisted
	case "policy":
		return ErrPolicy
	}
	return ErrNotApproved
}

// redactedError is an error whose message was redacted; errors.Is and As
// still find its cause (the kind of failure, for the host's boundary), but
// its message is the only text of it that is shown.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactError is err with its message redacted for the sandbox (nil for
// nil); errors.Is and As still find its cause.
func (s *Session) RedactError(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: s.Redact(err.Error()), err: err}
}

// Result is what a request that went through the gate answered, as the
// sandbox gets it.
type Result struct {
	// JSON is the answer, redacted.
	JSON json.RawMessage
	// ToolError says the answer is a tool's result with isError set, as
	// the gate decided for its audit: whoever else needs to know (the
	// observed shapes) reads it here rather than deciding again.
	ToolError bool
}

// Through takes req through the gate: policy, approval, tokens put back,
// do (the upstream), audit, redaction of what do returns.
func (s *Session) Through(ctx context.Context, req Request, do func(context.Context, json.RawMessage) (json.RawMessage, error)) (Result, error) {
	g := s.g
	t := req.Target
	id := strconv.FormatUint(g.ids.Add(1), 10)
	ctx, span := g.cfg.Tracing.start(ctx, t.Kind+" "+t.Server+"."+t.Name,
		attribute.String("codebridge.session", s.ID), attribute.String("codebridge.kind", t.Kind),
		attribute.String("codebridge.server", t.Server), attribute.String("codebridge.name", t.Name))
	params, perr := req.Params, error(nil) // what is shown, audited and sent
	if !req.Canonical {
		if params, perr = Canonical(req.Params); perr != nil {
			params = req.Params // audited as sent, and refused
		}
	}
	args := req.Arguments
	if !req.Canonical || args == nil {
		args = arguments(params)
	}
	rec := Record{Event: "call", ID: id, Session: s.ID, Kind: t.Kind, Server: t.Server, Name: t.Name, ArgBytes: len(args)}
	if g.cfg.Audit != nil {
		sum := sha256.Sum256(args)
		rec.ArgSHA = hex.EncodeToString(sum[:])
		if g.cfg.Audit.Args {
			rec.Args = args
		}
	}

	d, by := g.decide(req, perr)
	rec.Decision, rec.By, rec.Rule = string(d.Verdict), by, d.Rule
	d, rec.By = s.approve(ctx, req, d, by, args)
	span.SetAttributes(attribute.String("codebridge.decision", string(d.Verdict)), attribute.String("codebridge.decided_by", rec.By))
	if d.Verdict == Deny {
		err := &DeniedError{Target: t, Rule: d.Rule, Why: denyWhy(rec.By, d), Cause: deniedBy(rec.By)}
		rec.Outcome, rec.Error = "denied", s.Redact(err.Why)
		s.record(req.Run, rec, err)
		endSpan(span, "denied", err.Error())
		return Result{}, err
	}
	s.record(req.Run, rec, nil) // before the upstream sees the call

	params = s.RestoreFor(t.Server, params)
	start := time.Now()
	res, err := do(ctx, params)
	done := Record{Event: "done", ID: id, Session: s.ID, DurationMS: float64(time.Since(start).Microseconds()) / 1000, ResultBytes: len(res), Outcome: "ok"}
	switch {
	case err != nil:
		err = s.RedactError(err)
		done.Outcome, done.Error = "error", err.Error()
		if ctx.Err() != nil { // the cell ended first: the upstream may have acted
			done.Outcome = "cancelled"
		}
	case isToolError(res):
		done.Outcome = string(CallToolError)
	}
	s.record(req.Run, done, err)
	endSpan(span, done.Outcome, done.Error)
	if err != nil {
		return Result{}, err
	}
	return Result{JSON: s.RedactJSON(res), ToolError: done.Outcome == string(CallToolError)}, nil
}

// decide is the policy's decision on a request, and who made it: a
// request whose parameters are not one unambiguous JSON value, or that
// names a tool its server does not list, is refused whatever the rules.
func (g *Gate) decide(req Request, perr error) (Decision, string) {
	switch {
	case perr != nil:
		return Decision{Deny, "its parameters: " + strings.TrimPrefix(perr.Error(), "jsontext: ")}, "parameters"
	case req.Unlisted:
		return Decision{Deny, fmt.Sprintf("server %q lists no tool named exactly %q", req.Target.Server, req.Target.Name)}, "listing"
	}
	return g.policy.Decide(req.Target, req.Annotations), "policy"
}

// denyWhy says why a call was denied and what to do about it.
func denyWhy(by string, d Decision) string {
	switch by {
	case "parameters":
		return "a name appears twice in one object (an upstream would act on one of the two while a person " +
			"reading the call saw the other), or the text is not JSON; send each name once"
	case "listing":
		return "a call must name one of the server's tools exactly, case and punctuation included; " +
			"list_tools shows their names"
	case "no-client":
		const cannot = "it needs the user's approval, and the MCP client cannot ask for it (no elicitation support); "
		if d.fromRule() {
			// An ask rule wins over the allow list and over the mode.
			return cannot + "to run it, remove it from that ask rule in the config, or use a client that can answer approval requests"
		}
		return cannot + "to run it, add the tool to the server's \"tools\": {\"allow\": [...]} in the config, start codebridge with --policy open, " +
			"or use a client that can answer approval requests"
	case "timeout":
		return "the user did not answer the approval request in time; ask again, or allow the tool in the config"
	case "user", "error":
		return "the user did not approve it"
	}
	return "the policy does not allow it; change the rule in the config (or --policy) to allow it"
}

func (s *Session) audit(r Record) {
	a := s.g.cfg.Audit
	if a == nil {
		return
	}
	r.Time, r.Principal = time.Now().UTC(), s.Principal
	if err := a.Write(r); err != nil {
		s.g.logger().Error("the audit log cannot be written", "err", err)
	}
}

// arguments picks the "arguments" of a request's params (a tool call's);
// a request without them is audited whole.
func arguments(params json.RawMessage) []byte {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) == nil && p.Arguments != nil {
		return p.Arguments
	}
	return params
}

// isToolError reports whether a CallToolResult has isError set: the one
// place a call's result is read for it ([Result.ToolError]).
func isToolError(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}

// Policy is the policy the session's requests are decided by.
func (s *Session) Policy() *Policy { return s.g.policy }
