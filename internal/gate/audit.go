package gate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Record is one line of the audit log. A call has two: event "call" when
// it is decided (written before the upstream sees it, so that a call that
// reached the upstream is on record even if the bridge dies), and event
// "done" when it ends, with the same ID. A denied call has only its
// "call" line, outcome "denied". A run_python has one "run" line when it
// ends. No line holds a secret: arguments appear only as their size and
// SHA-256 unless the log was opened to keep them, and then as the sandbox
// wrote them (tokens, not the private values they stand for).
type Record struct {
	Time    time.Time `json:"time"`
	Event   string    `json:"event"` // call, done, run
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Kind    string    `json:"kind,omitempty"` // tool, resource, prompt, package
	Server  string    `json:"server,omitempty"`
	Name    string    `json:"name,omitempty"`
	// Decision is allow, ask or deny as the policy said; By says who
	// settled it: policy, user, session (an earlier "for this session"), cell
	// (an earlier "for this cell"),
	// or timeout / no-client when an ask fell back to deny.
	Decision string          `json:"decision,omitempty"`
	By       string          `json:"by,omitempty"`
	Rule     string          `json:"rule,omitempty"`
	ArgBytes int             `json:"arg_bytes"`
	ArgSHA   string          `json:"arg_sha256,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	// Outcome is ok, error (the call did not complete), cancelled (its
	// cell ended before the upstream answered: the upstream may have
	// acted), tool_error (the tool reported isError), denied, or for a
	// run the status its cell ended with as the sandbox reported it (ok,
	// error, timeout, cancelled, crashed), never read from the text the
	// code printed.
	Outcome     string  `json:"outcome,omitempty"`
	Error       string  `json:"error,omitempty"`
	DurationMS  float64 `json:"duration_ms,omitempty"`
	ResultBytes int     `json:"result_bytes,omitempty"`
	// Principal is who the session acts for: "local" (stdio, exec) or
	// "token:NAME", the owner of the HTTP session's bearer token.
	Principal string `json:"principal,omitempty"`
}

// AuditLog appends records to a JSON Lines file. Each record is one
// write(2) of one whole line on a file opened with O_APPEND, so that a
// record the bridge wrote is in the file (the kernel's) even if the bridge
// is killed the next instant, and no line is ever half-written by one
// record racing another.
type AuditLog struct {
	mu   sync.Mutex
	f    *os.File
	Args bool // keep the arguments themselves, not only their size and hash
	err  error
}

// OpenAudit opens (creating, mode 0600) the audit log at path.
func OpenAudit(path string, keepArgs bool) (*AuditLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w; pass --audit FILE with a writable path", err)
	}
	return &AuditLog{f: f, Args: keepArgs}, nil
}

// Write appends one record. The first failure is kept (Err) and returned.
func (a *AuditLog) Write(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(line); err != nil {
		if a.err == nil {
			a.err = fmt.Errorf("writing the audit log %s: %w", a.f.Name(), err)
		}
		return a.err
	}
	return nil
}

// Close closes the file.
func (a *AuditLog) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Close()
}

// ReadAudit reads the records of an audit log written since since (zero:
// all). A line that is not a record (a torn last line after a full disk)
// is reported as bad and skipped.
func ReadAudit(r io.Reader, since time.Time) (recs []Record, bad int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var rec Record
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Event == "" {
			bad++
			continue
		}
		if rec.Time.Before(since) {
			continue
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return recs, bad, err
	}
	return recs, bad, nil
}

// Entry is one call as the audit command shows it: its "call" record with
// the "done" record merged in (Outcome "unfinished" when there is none:
// the bridge stopped while the call ran).
func Entries(recs []Record) []Record {
	done := map[string]Record{}
	for _, r := range recs {
		if r.Event == "done" {
			done[r.Session+"/"+r.ID] = r
		}
	}
	var out []Record
	for _, r := range recs {
		switch r.Event {
		case "run":
			out = append(out, r)
		case "call":
			if d, ok := done[r.Session+"/"+r.ID]; ok {
				r.Outcome, r.Error, r.DurationMS, r.ResultBytes = d.Outcome, d.Error, d.DurationMS, d.ResultBytes
			} else if r.Outcome == "" {
				r.Outcome = "unfinished"
			}
			out = append(out, r)
		}
	}
	return out
}
