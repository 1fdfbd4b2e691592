package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoIdleWeight: the bridge does not link packages that would
// only cost memory in a bridge that does not use them: gRPC (and what it
// brings: grpc-gateway, x/net/trace, html/template) came with the SDK's
// OTLP/HTTP exporter, which internal/otlphttp replaces. Every linked
// package's code is mapped and its init runs at start, used or not. (The
// Kubernetes engine will be linked into every bridge, as DESIGN.md's
// idle target says "with every engine compiled in": its weight is
// measured by make bench, not refused here.)
func TestLinksNoIdleWeight(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range []string{"google.golang.org/grpc", "github.com/grpc-ecosystem/", "golang.org/x/net/trace", "html/template",
			"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", "go.opentelemetry.io/proto/otlp/collector/"} {
			if strings.HasPrefix(pkg, heavy) {
				t.Errorf("codebridge links %s", pkg)
			}
		}
	}
}

// TestNoReflectiveMethodCalls: nothing the bridge can run calls methods
// by name through reflection (text/template's execution, reached once by
// a cobra version template, did). Such a call makes the linker keep every
// exported method of every type that can reach an interface: 4 MB of
// binary and 2 MB of idle RSS.
func TestNoReflectiveMethodCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("links the binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "build", "-ldflags=-dumpdep", "-o", os.DevNull, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "<ReflectMethod>") {
			t.Fatalf("a reflective method call is reachable: %s", line)
		}
	}
}
