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
// package's code is mapped and its init runs at start, used or not.
//
// The Kubernetes engine is opt-in at build time (build tag kubernetes):
// the default build links no k8s.io package at all. Measured (make
// bench's idle RSS, warm sandbox and three warm upstreams, Podman):
// 22.2 MB without the engine, 28.2 MB with it, binary 22.4 MB without,
// 34.2 MB with it; in an otherwise empty program k8s.io/client-go/rest
// alone costs about 8 MB of RSS (its code is mapped and its packages'
// inits run), clientcmd 0.2 MB, remotecommand with core/v1 0.9 MB. With
// the tag the engine uses the smallest part of client-go that does the
// job: the REST client, clientcmd and remotecommand, with a scheme of the
// core group made on first use (sandbox/engine/kube/client.go). What this test
// refuses there is the rest of it: the generated clientset
// (k8s.io/client-go/kubernetes and its typed packages, whose
// kubernetes/scheme registers all ~50 API groups at start), apply
// configurations, informers, the dynamic client, and k8s.io/kubernetes
// itself. Both builds are checked whatever tags the test runs with.
func TestLinksNoIdleWeight(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	heavies := []string{"google.golang.org/grpc", "github.com/grpc-ecosystem/", "golang.org/x/net/trace", "html/template",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", "go.opentelemetry.io/proto/otlp/collector/",
		"k8s.io/client-go/kubernetes", "k8s.io/client-go/applyconfigurations", "k8s.io/client-go/informers",
		"k8s.io/client-go/dynamic", "k8s.io/client-go/discovery", "k8s.io/kubernetes/"}
	for _, tags := range []string{"", "kubernetes"} {
		t.Run("tags="+tags, func(t *testing.T) {
			out, err := exec.Command(goBin, "list", "-deps", "-tags="+tags, ".").Output()
			if err != nil {
				t.Fatalf("go list -deps -tags=%s: %v", tags, err)
			}
			refused := heavies
			if tags == "" {
				refused = append(heavies[:len(heavies):len(heavies)], "k8s.io/")
			}
			engine := false
			for _, pkg := range strings.Fields(string(out)) {
				engine = engine || pkg == "k8s.io/client-go/tools/remotecommand"
				for _, heavy := range refused {
					if strings.HasPrefix(pkg, heavy) {
						t.Errorf("codebridge (tags %q) links %s", tags, pkg)
						break
					}
				}
			}
			if tags != "" && !engine {
				t.Error("the kubernetes engine (client-go's remotecommand) is not linked with -tags kubernetes: this test no longer checks what it should")
			}
		})
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
