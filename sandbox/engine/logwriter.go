package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// LogWriter sends what a container says for the host's log to it, a line
// at a time, with lines cut so that nothing in the container can flood the
// host's memory: its stderr (the runtime's own diagnostics, never user
// output) through Write, and the runtime's log frames through Frame. With
// a budget, it logs at most that many bytes and then one line that says how
// many it dropped, so that nothing in the container can flood the log.
// A line costs what the log handler may write for it (escapes included)
// and a record's own bytes, so that neither many empty lines nor text that
// escapes to several times its size can get past the budget. The zero
// LogWriter logs nothing and only remembers lines for [LogWriter.Saw].
type LogWriter struct {
	prefix string // what wrote it, e.g. "sandbox runtime: "
	budget int    // bytes to log at most; 0 means no limit

	log     *slog.Logger
	mu      sync.Mutex
	line    []byte
	long    bool     // the current line was cut at logLineMax
	last    []string // the most recent lines of the stream, for error messages
	logged  int
	dropped int64
}

const logLineMax = 4096

// NewLogWriter returns a writer that logs to log, each line after prefix
// (what wrote it, e.g. "sandbox runtime: "), at most budget bytes (0
// means no limit).
func NewLogWriter(prefix string, budget int, log *slog.Logger) *LogWriter {
	return &LogWriter{prefix: prefix, budget: budget, log: log}
}

// ContainerLogBudget is how much of a container's stderr the host logs,
// and how much of its runtime's log frames.
const ContainerLogBudget = 64 << 10

// logRecordCost is what a log record adds to its message, at most: the
// time, the level, the prefix and the container's attributes, in the text
// or the JSON handler.
const logRecordCost = 192

func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range p {
		if b == '\n' {
			w.flush()
			continue
		}
		if len(w.line) < logLineMax {
			w.line = append(w.line, b)
		} else {
			w.dropped++
			w.long = true
		}
	}
	return len(p), nil
}

// Frame logs the message of a log frame the runtime sent, a line at a time,
// at info with the frame's level as an attribute. Its lines are not kept for
// Saw: only the sandbox's init writes to stderr, while any code in the
// sandbox can send a log frame.
func (w *LogWriter) Frame(level, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch level {
	case "debug", "info", "warning", "error":
	default:
		level = "other" // the sandbox's word, kept out of the record
	}
	for line := range strings.SplitSeq(msg, "\n") {
		cut := len(line) > logLineMax
		if cut {
			w.dropped += int64(len(line) - logLineMax)
			line = line[:logLineMax]
		}
		w.emit(slog.LevelInfo, line, cut, "level", level)
	}
}

// Saw reports whether a line the container wrote to stderr starts with
// prefix (among the most recent ones).
func (w *LogWriter) Saw(prefix string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.HasPrefix(string(w.line), prefix) {
		return true
	}
	for _, l := range w.last {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// flush logs the current line of the stream.
func (w *LogWriter) flush() {
	s := string(w.line)
	w.line = w.line[:0]
	w.last = append(w.last, s)
	if len(w.last) > 20 {
		w.last = w.last[1:]
	}
	cut := w.long
	w.long = false
	w.emit(slog.LevelWarn, s, cut)
}

// emit logs one line within the budget, or counts it as dropped; cut says
// the line was cut at logLineMax. The caller holds w.mu.
func (w *LogWriter) emit(level slog.Level, s string, cut bool, attrs ...any) {
	n := len(s) + 1 // with its newline
	if cut {
		s += " [line cut]"
	}
	cost := logCost(w.prefix+s) + logRecordCost
	if w.budget > 0 && w.logged+cost > w.budget {
		if w.logged <= w.budget {
			w.log.Warn(w.prefix + fmt.Sprintf("over the %s budget of logged container output: the rest is dropped", SizeText(int64(w.budget))))
			w.logged = w.budget + 1
		}
		w.dropped += int64(n)
		return
	}
	w.logged += cost
	w.log.Log(context.Background(), level, w.prefix+s, attrs...)
}

// Close logs a line that is still open and how much was dropped.
func (w *LogWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 {
		w.flush()
	}
	if w.dropped > 0 {
		w.log.Warn(w.prefix + fmt.Sprintf("... %d bytes dropped", w.dropped))
		w.dropped = 0
	}
}

// logCost is the most bytes slog's text or JSON handler writes for s as a
// message: a quote or a backslash is escaped with a backslash, a control
// character or an invalid byte becomes an escape of up to six bytes, and
// a character that does not print one of up to ten (\U0001xxxx).
func logCost(s string) int {
	n := 2 // the quotes
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == 0x7f || r == utf8.RuneError && size == 1:
			n += 6
		case r < utf8.RuneSelf:
			n++
		case unicode.IsPrint(r) && r != '\u2028' && r != '\u2029':
			n += size
		case r > 0xffff:
			n += 10
		default:
			n += 6
		}
	}
	return n
}

// ClipText cuts s to n bytes for a log line or a message: text from the
// sandbox must not flood the host's log.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... [%d bytes cut]", len(s)-n)
}
