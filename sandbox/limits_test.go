package sandbox

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
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
	if _, err := newFrameReader(strings.NewReader("")).next(); !errors.Is(err, io.EOF) {
		t.Fatalf("an empty stream: %v, want io.EOF", err)
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
