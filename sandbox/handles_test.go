package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// listedEngine lists the containers it is given.
type listedEngine struct {
	procEngine
	list []ContainerInfo
}

func (e *listedEngine) List(context.Context) ([]ContainerInfo, error) { return e.list, nil }

// TestHandleSandboxesTakeOnlyDigests: from the side of someone who can
// label containers on a shared engine: a handle label that is no digest
// (an escape sequence, a path) names no session, so `codebridge sessions`
// never prints it, and its tag cannot be ended.
func TestHandleSandboxesTakeOnlyDigests(t *testing.T) {
	good := strings.Repeat("ab12", 12)
	eng := &listedEngine{list: []ContainerInfo{
		{ID: "c1", State: "running", Labels: map[string]string{engine.LabelHandle: good, engine.LabelPrincipal: "p"}},
		{ID: "c2", State: "running", Labels: map[string]string{engine.LabelHandle: "\x1b[31m0123456789abcdef"}},
		{ID: "c3", State: "running", Labels: map[string]string{engine.LabelHandle: "../../../etc/passwd/x"}},
		{ID: "c4", State: "running", Labels: map[string]string{engine.LabelHandle: "short"}},
	}}
	list, err := HandleSandboxes(context.Background(), eng)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "c1" || list[0].Tag != TagOf(good) {
		t.Fatalf("listed %+v, want only c1", list)
	}
	if err := EndHandleSandbox(context.Background(), eng, TagOf("\x1b[31m0123456789abcdef")); err == nil {
		t.Fatal("ended a session by a tag made of a hostile label")
	}
}
