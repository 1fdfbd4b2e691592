package main

import (
	"testing"

	"github.com/codebridge/codebridge/internal/principal"
)

func TestProjectVolume(t *testing.T) {
	local := principal.Local()
	a := projectVolume(local, "/home/u/src/My Project")
	if a != projectVolume(local, "/home/u/src/My Project") {
		t.Fatal("one project's volume name changes")
	}
	others := []string{
		projectVolume(local, "/home/u/other/My Project"),
		projectVolume(local, "/home/u/src/my project"),
		projectVolume(principal.Token("alice"), "/home/u/src/My Project"),
	}
	for _, o := range others {
		if o == a {
			t.Fatalf("two projects or principals share the volume %s", a)
		}
	}
	for _, n := range append(others, a, projectVolume(local, "/"), projectVolume(local, "/tmp/-rf --x\n\x1b[31m")) {
		if !volumeName(n) || len(n) > 64 {
			t.Errorf("%q is not a safe volume name", n)
		}
	}
	if want := "codebridge-ws-myproject-"; a[:len(want)] != want {
		t.Fatalf("the name does not show the project: %s", a)
	}
	if w, err := parseWorkspace(DefaultWorkspace); err != nil || !w.project {
		t.Fatalf("the default is not the project's volume: %+v %v", w, err)
	}
}
