package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/codebridge/codebridge/protocol"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// endless is a stream that never ends and never has a newline, as code
// writing to the runtime's frame descriptor can make it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestFrameReaderLimit(t *testing.T) {
	small := `{"t":"out","id":1,"stream":"stdout","data":"` + strings.Repeat("y", 900) + `"}` + "\n"
	fr := newFrameReader(io.MultiReader(strings.NewReader(small), &endless{}))
	fr.max = 1000
	if f, err := fr.next(); err != nil || len(f.(protocol.Out).Data) != 900 {
		t.Fatalf("a frame under the limit: %v", err)
	}
	_, err := fr.next()
	var pe *ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "over the 1000 bytes limit") {
		t.Fatalf("a line without end: %v, want a ProtocolError about the limit", err)
	}
}

func TestFrameReaderStopsReadingAtTheLimit(t *testing.T) {
	src := &endless{}
	fr := newFrameReader(src)
	fr.max = 4 << 20
	if _, err := fr.next(); err == nil {
		t.Fatal("no error for a line without end")
	}
	// What was read is what the limit allows, plus one buffer.
	if src.read > int64(fr.max)+512<<10 {
		t.Fatalf("read %d bytes of a line limited to %d", src.read, fr.max)
	}
}

func TestFrameReaderGarbageIsProtocolError(t *testing.T) {
	_, err := newFrameReader(strings.NewReader("not a frame\n")).next()
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("garbage: %v, want a ProtocolError", err)
	}
	if _, err := newFrameReader(strings.NewReader("")).next(); err != io.EOF {
		t.Fatalf("an empty stream: %v, want io.EOF", err)
	}
}

func TestExitReason(t *testing.T) {
	cases := []struct {
		name      string
		oom       bool
		known     bool
		code      int
		want, not string
	}{
		{"out of memory", true, true, 137, "it ran out of memory (the limit is 512 MiB)", "signal"},
		{"SIGKILL, not out of memory", false, true, 137, "killed by signal 9 (SIGKILL)", "memory"},
		{"SIGKILL, nobody could tell", false, false, 137, "killed by signal 9 (SIGKILL); if the code used much memory, it ran out (the limit is 512 MiB)", ""},
		{"abort", false, false, 134, "killed by signal 6 (SIGABRT)", "memory"},
		{"os._exit(3)", false, false, 3, "exited with code 3 (os._exit() ends the whole sandbox", "signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := exitReason(c.oom, c.known, c.code, 512<<20)
			if !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
				t.Fatalf("exitReason = %q, want %q and not %q", got, c.want, c.not)
			}
		})
	}
}

func TestKeepImageBounds(t *testing.T) {
	res := &Result{}
	stderr := newClipBuffer(10000)
	big := strings.Repeat("A", maxImageBytes/2+1)
	keepImage(res, protocol.Image{Mime: "image/png", Data: big}, stderr)
	keepImage(res, protocol.Image{Mime: "image/png", Data: big}, stderr) // over the byte budget
	for range maxImages + 2 {
		keepImage(res, protocol.Image{Mime: "image/png", Data: "AAAA"}, stderr)
	}
	if len(res.Images) != maxImages {
		t.Fatalf("kept %d images, want %d", len(res.Images), maxImages)
	}
	out := stderr.output(nil).Text
	if n := strings.Count(out, "was left out"); n != 4 { // the second big one, and 3 past the count
		t.Fatalf("%d images reported as left out, want 4:\n%s", n, out)
	}
}

// TestLogWriterBudget floods a container's stderr: the log gets at most the
// budget and one line saying how much was dropped, while a line written
// after the flood is still seen (the init's last word about a crash).
func TestLogWriterBudget(t *testing.T) {
	var logged bytes.Buffer
	line := strings.Repeat("z", 99) + "\n"
	perLine := logCost("sandbox runtime: "+line[:99]) + logRecordCost
	w := &logWriter{prefix: "sandbox runtime: ", budget: 10 * perLine, log: slog.New(slog.NewTextHandler(&logged, nil))}
	for range 1000 {
		w.Write([]byte(line))
	}
	w.Write([]byte(strings.Repeat("y", 2*logLineMax) + "\n")) // cut to logLineMax, the rest dropped too
	w.Write([]byte(oomMarker + ": the kernel killed the runtime\n"))
	w.close()
	out := logged.String()
	if n := strings.Count(out, "z\"\n"); n != 10 {
		t.Errorf("%d flood lines logged, want the 10 that fit the budget", n)
	}
	want := fmt.Sprintf("... %d bytes dropped", 990*100+2*logLineMax+1+len(oomMarker)+len(": the kernel killed the runtime")+1)
	if !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("over the %d bytes budget", w.budget)) {
		t.Errorf("the log does not say what was dropped (want %q):\n%s", want, out[max(0, len(out)-600):])
	}
	if logged.Len() > w.budget+400 { // the two lines about the budget
		t.Errorf("logged %d bytes with a budget of %d", logged.Len(), w.budget)
	}
	if !w.saw(oomMarker) {
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
	floods := map[string]func(w *logWriter){
		"empty": func(w *logWriter) {
			for range 20000 {
				w.frame("info", "")
			}
		},
		"lines": func(w *logWriter) {
			for range 200 {
				w.frame("warning", strings.Repeat("\n", 1000))
			}
		},
		"escapes": func(w *logWriter) {
			for range 2000 {
				w.frame("error", strings.Repeat("\x01\"\xff\u202e\U000e0001", 400))
			}
		},
		"long": func(w *logWriter) {
			for range 2000 {
				w.frame(strings.Repeat("\x1b", 5000), strings.Repeat("w", 3*logLineMax))
			}
		},
		"marker": func(w *logWriter) {
			for range 2000 {
				w.frame("error", oomMarker)
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
			w := &logWriter{prefix: "sandbox runtime: ", budget: budget, log: slog.New(h).With("container", "0123456789ab")}
			flood(w)
			w.close()
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
			if w.saw(oomMarker) {
				t.Errorf("%s (json %v): a log frame was taken for the init's line", name, json)
			}
		}
	}
}

// TestHostConfigSizesEveryWritableMount checks that every tmpfs the
// container gets has a size, and that the OCI runtime setting reaches the
// engine.
func TestHostConfigSizesEveryWritableMount(t *testing.T) {
	hc := hostConfig(Limits{Runtime: "runsc"})
	for _, m := range []string{"/tmp", "/workspace", "/var/tmp", "/run"} {
		if !strings.Contains(hc.Tmpfs[m], "size=") {
			t.Errorf("tmpfs %s has no size: %q", m, hc.Tmpfs[m])
		}
	}
	if hc.ShmSize <= 0 {
		t.Error("/dev/shm has no size")
	}
	if hc.Runtime != "runsc" {
		t.Errorf("runtime %q, want runsc", hc.Runtime)
	}
}

// TestKeepImageOnlyPictures: an image frame's MIME type comes from code in
// the sandbox; only picture types reach the client, and the refusal is
// said on stderr.
func TestKeepImageOnlyPictures(t *testing.T) {
	res := &Result{}
	stderr := newClipBuffer(10000)
	for _, mime := range []string{"text/html", "image/svg+xml", "application/javascript", "IMAGE/PNG", "image/jpeg"} {
		keepImage(res, protocol.Image{Mime: mime, Data: "AAAA"}, stderr)
	}
	if len(res.Images) != 2 || res.Images[0].MIME != "image/png" || res.Images[1].MIME != "image/jpeg" {
		t.Fatalf("kept %+v, want the PNG and the JPEG only", res.Images)
	}
	if out := stderr.output(nil).Text; strings.Count(out, "was left out: only PNG") != 3 {
		t.Fatalf("stderr:\n%s", out)
	}
}
