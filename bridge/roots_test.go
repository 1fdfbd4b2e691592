package bridge

import (
	"context"
	"strings"
	"testing"
)

// Roots are offered to an upstream only when something can give them, and
// the refusal's advice never asks for --root alone (it replaces the
// directories a server such as the filesystem server was given).
func TestAnswersRoots(t *testing.T) {
	d := &router{c: noClients()}
	if d.AnswersRoots("fs") {
		t.Fatal("roots offered with no client and no --root")
	}
	_, err := d.ListRoots(context.Background(), "fs")
	if err == nil || !strings.Contains(err.Error(), "name it in the server's own entry") || strings.Contains(err.Error(), "start it with --root") {
		t.Fatalf("refusal: %v", err)
	}
	d.c.roots = rootsFromDirs([]string{"/srv/project"})
	if !d.AnswersRoots("fs") {
		t.Fatal("roots not offered though --root is set")
	}
}
