package protocol

import (
	"reflect"
	"testing"
)

// TestRewindFramesDecode: the rewind frames and the done frame's rewind
// field decode by their type, and a rewound frame round-trips whole.
func TestRewindFramesDecode(t *testing.T) {
	f, err := Decode([]byte(`{"t":"done","id":3,"status":"ok","value":null,"error":null,"rewind":2}`))
	if err != nil || f.(Done).Rewind != 2 {
		t.Fatalf("done with rewind: %#v, %v", f, err)
	}
	f, err = Decode([]byte(`{"t":"rewind","n":2}`))
	if err != nil || f != (Rewind{N: 2}) {
		t.Fatalf("rewind: %#v, %v", f, err)
	}
	line := `{"t":"rewound","ok":true,"cells":1,"workspace":{"kept":false,"reason":"too big","files":0,"copied":0,"removed":0},"names":["a"],"modules":["json"],"more":0,"threads":["worker"]}`
	f, err = Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Rewound{OK: true, Cells: 1, Workspace: &RewoundFiles{Reason: "too big"}, Names: []string{"a"}, Modules: []string{"json"}, Threads: []string{"worker"}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("rewound: %#v", f)
	}
	out, err := Encode(f)
	if err != nil || string(out) != line+"\n" {
		t.Fatalf("rewound re-encoded: %s, %v", out, err)
	}
}
