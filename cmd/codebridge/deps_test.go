package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoIdleWeight: the bridge does not link packages that would
// only cost memory in a bridge that does not use them: gRPC (and what it
// brings: grpc-gateway, x/net/trace, html/template) came with the SDK's
// OTLP/HTTP exporter, which internal/otlphttp replaces; a Kubernetes
// client library would weigh on every bridge, Kubernetes or not. Every
// linked package's code is mapped and its init runs at start, used or not.
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
			"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", "go.opentelemetry.io/proto/otlp/collector/", "k8s.io/"} {
			if strings.HasPrefix(pkg, heavy) {
				t.Errorf("codebridge links %s", pkg)
			}
		}
	}
}
