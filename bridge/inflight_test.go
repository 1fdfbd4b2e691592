package bridge

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInflightOnlyWhenUnambiguous: a shared server's request goes to the
// one session with calls in flight to it, and to none when two have.
func TestInflightOnlyWhenUnambiguous(t *testing.T) {
	var f inflight
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	if f.only("s") != nil {
		t.Fatal("a session with no call in flight")
	}
	endA1 := f.begin("s", a)
	endA2 := f.begin("s", a)
	endB := f.begin("other", b)
	if f.only("s") != a || f.only("other") != b {
		t.Fatal("the one calling session is not chosen")
	}
	endA1()
	if f.only("s") != a {
		t.Fatal("a's second call no longer counts")
	}
	endB2 := f.begin("s", b)
	if f.only("s") != nil {
		t.Fatal("two sessions calling: a request cannot be told apart, yet one was chosen")
	}
	endA2()
	if f.only("s") != b {
		t.Fatal("after a's calls ended, b is the one")
	}
	endB2()
	endB()
	if f.only("s") != nil || f.only("other") != nil {
		t.Fatal("sessions chosen after every call ended")
	}
	var none *inflight
	none.begin("s", a)()
	if none.only("s") != nil {
		t.Fatal("a nil counter chose a session")
	}
}
