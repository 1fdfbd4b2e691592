package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Run is one run_python call in flight: its audit line and span, and the
// cell whose requests name it ([Request.Run]).
type Run struct {
	s     *Session
	code  string
	start time.Time
	rec   Record
	end   func(outcome, msg string)
	calls *ledger // the requests the cell made ([Run.Calls])
	prev  *ledger // the ledger of the run the session started before this one; nil: none

	approvals approvals // the cell's approvals, questions out and batches forming (approve.go)
}

// Code is the code the run was given.
func (r *Run) Code() string { return r.code }

// StartRun begins the record and span of one run_python call with code;
// the returned context carries the span, so that the calls the code makes
// are its children.
func (s *Session) StartRun(ctx context.Context, code string) (context.Context, *Run) {
	ctx, span := s.g.cfg.Tracing.start(ctx, "run_python",
		attribute.String("codebridge.session", s.ID), attribute.Int("codebridge.code_bytes", len(code)))
	sum := sha256.Sum256([]byte(code))
	r := &Run{s: s, code: code, start: time.Now(), rec: Record{Event: "run", ID: "run-" + strconv.FormatUint(s.g.ids.Add(1), 10), Session: s.ID,
		ArgBytes: len(code), ArgSHA: hex.EncodeToString(sum[:])}}
	r.end = func(outcome, msg string) { endSpan(span, outcome, msg) }
	r.calls = newLedger()
	s.mu.Lock()
	r.prev, s.lastCell = s.lastCell, r.calls
	s.mu.Unlock()
	return ctx, r
}

// Finish records the run's outcome (ok, error, timeout...) and the size
// of what the model reads.
func (r *Run) Finish(outcome string, resultBytes int) {
	r.rec.Outcome, r.rec.ResultBytes = outcome, resultBytes
	r.rec.DurationMS = float64(time.Since(r.start).Microseconds()) / 1000
	r.s.audit(r.rec)
	r.end(outcome, "run_python "+outcome)
}
