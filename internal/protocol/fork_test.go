package protocol

import "testing"

// TestForkFramesDecode: the done frame's fork flag and the forked frame.
func TestForkFramesDecode(t *testing.T) {
	f, err := Decode([]byte(`{"t":"done","id":3,"status":"ok","value":null,"error":null,"fork":true}`))
	if err != nil || !f.(Done).Fork {
		t.Fatalf("done with fork: %#v, %v", f, err)
	}
	f, err = Decode([]byte(`{"t":"forked","ok":true,"key":"k","pid":7,"dir":"/workspace/.forks/a","files":{"copied":true,"bytes":3},"threads":["w"]}`))
	got, ok := f.(Forked)
	if err != nil || !ok || !got.OK || got.Key != "k" || got.Dir != "/workspace/.forks/a" || !got.Files.Copied || got.Threads[0] != "w" {
		t.Fatalf("forked: %#v, %v", f, err)
	}
}

// TestForkHandoverFrames: a runtime with no init yet asks for a handover
// before its forked answer, and the host's handover frame encodes as the
// runtime reads it.
func TestForkHandoverFrames(t *testing.T) {
	f, err := Decode([]byte(`{"t":"forked","ok":false,"handover":true}`))
	if got, ok := f.(Forked); err != nil || !ok || got.OK || !got.Handover {
		t.Fatalf("forked with handover: %#v, %v", f, err)
	}
	line, err := Encode(Handover{})
	if err != nil || string(line) != `{"t":"handover"}`+"\n" {
		t.Fatalf("handover frame: %q, %v", line, err)
	}
}
