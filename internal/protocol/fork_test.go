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
