// Package gate is the one layer every request of the sandbox that acts on
// something (a tool call, a resource read, a prompt, an install) passes
// through on the host, in a fixed order:
//
//	policy -> approval -> private values put back into the arguments
//	       -> the upstream -> audit -> redaction of what returns
//
// Each rule is written once here and applies to every kind of request:
//
//   - The request's parameters are parsed once and encoded again in a
//     canonical form (a name given twice is refused): that form is what
//     is shown, audited and sent upstream.
//   - [Policy] decides allow, ask or deny from the server's "tools",
//     "resources" and "prompts" rules (allow/deny/ask patterns, see
//     [CheckPattern]) and a global mode read from the tools' own
//     annotations (open, ask-destructive, read-only); a tool call that
//     names no listed tool exactly is denied.
//   - An "ask" decision goes to an [Asker] (the bridge's: MCP
//     elicitation/create to the client) as a [Question] that shows the
//     calls and the cell's code around them; the requests of one batch
//     (sent together by the cell) are asked about once, and an answer
//     reaches the calls asked about, the rest of the cell ([Run]) or the
//     rest of the [Session] ([Scope], approve.go).
//   - [Redactor] turns personal data (email, phone, card, ssn, ip, iban and
//     custom patterns) into stable tokens such as <email_1>, per session,
//     and always hides the values of upstream env and headers; the token
//     map lives in memory only, and [Session.Restore] puts real values
//     back into arguments before the upstream sees them, and
//     [Session.RestoreFor] into the client's answers to an upstream's
//     sampling or elicitation (neither for a server in
//     [Config.KeepTokens]). Values are found in the forms
//     they take on the way back (forms.go: JSON-escaped, percent-encoded,
//     base64), and every value with a token is hidden as an exact value
//     (needles.go), so a token put back cannot return as its value.
//   - [AuditLog] appends one JSON line when a call is decided (before it
//     reaches the upstream) and one when it ends; [ReadAudit] reads them.
//   - Each cell's calls are kept in its ledger ([Run.Calls]), fed by the
//     same records at the same points as the audit, so that a cell cut
//     short can say which calls finished, failed or were cut off.
//   - OpenTelemetry spans, one per run_python and one per call, exported
//     with the official SDK when OTEL_EXPORTER_OTLP_* is set ([NewTracing]).
package gate
