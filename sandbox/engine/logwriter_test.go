package engine

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestLogWriterBudget floods a container's stderr: the log gets at most the
// budget and one line saying how much was dropped, while a line written
// after the flood is still seen (the init's last word about a crash).
func TestLogWriterBudget(t *testing.T) {
	var logged bytes.Buffer
	line := strings.Repeat("z", 99) + "\n"
	perLine := logCost("sandbox runtime: "+line[:99]) + logRecordCost
	w := &LogWriter{prefix: "sandbox runtime: ", budget: 10 * perLine, log: slog.New(slog.NewTextHandler(&logged, nil))}
	for range 1000 {
		mustWrite(t, w, line)
	}
	mustWrite(t, w, strings.Repeat("y", 2*logLineMax)+"\n") // cut to logLineMax, the rest dropped too
	mustWrite(t, w, OOMMarker+": the kernel killed the runtime\n")
	w.Close()
	out := logged.String()
	if n := strings.Count(out, "z\"\n"); n != 10 {
		t.Errorf("%d flood lines logged, want the 10 that fit the budget", n)
	}
	want := fmt.Sprintf("... %d bytes dropped", 990*100+2*logLineMax+1+len(OOMMarker)+len(": the kernel killed the runtime")+1)
	if !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("over the %d bytes budget", w.budget)) {
		t.Errorf("the log does not say what was dropped (want %q):\n%s", want, out[max(0, len(out)-600):])
	}
	if logged.Len() > w.budget+400 { // the two lines about the budget
		t.Errorf("logged %d bytes with a budget of %d", logged.Len(), w.budget)
	}
	if !w.Saw(OOMMarker) {
		t.Error("the line after the flood was not seen")
	}
}

// TestLogWriterFrames floods the log as code in the sandbox can, with log
// frames: many empty messages, messages of many lines, characters the log
// handlers escape to several bytes, long lines and made-up levels. The
// log, text or JSON, grows by at most the budget and the lines about it;
// a frame's line never counts as the init's (saw).
func TestLogWriterFrames(t *testing.T) {
	const budget = 64 << 10
	floods := map[string]func(w *LogWriter){
		"empty": func(w *LogWriter) {
			for range 20000 {
				w.Frame("info", "")
			}
		},
		"lines": func(w *LogWriter) {
			for range 200 {
				w.Frame("warning", strings.Repeat("\n", 1000))
			}
		},
		"escapes": func(w *LogWriter) {
			for range 2000 {
				w.Frame("error", strings.Repeat("\x01\"\xff\u202e\U000e0001", 400))
			}
		},
		"long": func(w *LogWriter) {
			for range 2000 {
				w.Frame(strings.Repeat("\x1b", 5000), strings.Repeat("w", 3*logLineMax))
			}
		},
		"marker": func(w *LogWriter) {
			for range 2000 {
				w.Frame("error", OOMMarker)
			}
		},
	}
	for name, flood := range floods {
		for _, json := range []bool{false, true} {
			var logged bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&logged, nil)
			if json {
				h = slog.NewJSONHandler(&logged, nil)
			}
			w := &LogWriter{prefix: "sandbox runtime: ", budget: budget, log: slog.New(h).With("container", "0123456789ab")}
			flood(w)
			w.Close()
			out := logged.String()
			if logged.Len() > budget+400 {
				t.Errorf("%s (json %v): the log grew by %d bytes with a budget of %d", name, json, logged.Len(), budget)
			}
			if !strings.Contains(out, "bytes dropped") {
				t.Errorf("%s (json %v): no line says what was dropped:\n%s", name, json, out[max(0, len(out)-300):])
			}
			if strings.Contains(out, "\x1b") || strings.Contains(out, "\\u001b") {
				t.Errorf("%s (json %v): the sandbox's level reached the log", name, json)
			}
			if w.Saw(OOMMarker) {
				t.Errorf("%s (json %v): a log frame was taken for the init's line", name, json)
			}
		}
	}
}

// mustWrite writes s to w, which takes every byte, dropped or logged.
func mustWrite(t *testing.T, w *LogWriter, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write took %d of %d bytes: %v", n, len(s), err)
	}
}
