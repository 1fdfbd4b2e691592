package e2e

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox"
)

// onKubernetes reports whether this run uses the kubernetes engine
// (CODEBRIDGE_ENGINE=kubernetes, with KUBECONFIG naming the cluster).
func onKubernetes() bool { return os.Getenv("CODEBRIDGE_ENGINE") == sandbox.EngineKubernetes }

// engineOptions are the options every test's own engine connection uses:
// the engine and namespace the bridges under test use too.
func engineOptions() sandbox.EngineOptions {
	return sandbox.EngineOptions{Kind: os.Getenv("CODEBRIDGE_ENGINE"), Namespace: os.Getenv("CODEBRIDGE_NAMESPACE")}
}

// localEngineOnly skips a test that is about a local engine (the direct
// channel, Podman, engine volumes, host mounts) when the run uses
// Kubernetes, saying why.
func localEngineOnly(t *testing.T, why string) {
	t.Helper()
	if onKubernetes() {
		t.Skip("local engines only: " + why)
	}
}

// sandboxNICs are the network interfaces a sandbox has, as a JSON list:
// only loopback on the local engines; on Kubernetes also the Pod
// network's, which the deny-all NetworkPolicy closes.
func sandboxNICs() string {
	if onKubernetes() {
		return `["eth0", "lo"]`
	}
	return `["lo"]`
}

// codebridgeSeccomp skips a test of codebridge's own seccomp profile on
// Kubernetes when the run asks for the container runtime's profile
// (CODEBRIDGE_SECCOMP_LOCALHOST=RuntimeDefault); by default sandbox Pods
// get codebridge's, installed on the nodes.
func codebridgeSeccomp(t *testing.T) {
	t.Helper()
	if onKubernetes() && os.Getenv("CODEBRIDGE_SECCOMP_LOCALHOST") == sandbox.SeccompRuntimeDefault {
		t.Skip("the run gives Kubernetes sandboxes the container runtime's profile (CODEBRIDGE_SECCOMP_LOCALHOST=RuntimeDefault)")
	}
}

// buildTags are the tags codebridge is built with for this run: the
// kubernetes engine is compiled in only with the tag kubernetes.
func buildTags() []string {
	if onKubernetes() {
		return []string{"-tags", "kubernetes"}
	}
	return nil
}

// checkBinaryEngine says why the codebridge binary under test cannot run
// this run's engine: with CODEBRIDGE_ENGINE=kubernetes, one built
// without the tag kubernetes (a CODEBRIDGE_BIN from a default build)
// would refuse every bridge. It reads the binary's build settings, so
// it needs no go command.
func checkBinaryEngine(path string) error {
	if !onKubernetes() {
		return nil
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the build settings of %s: %w", path, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), "kubernetes") {
			return nil
		}
	}
	return fmt.Errorf("CODEBRIDGE_ENGINE=kubernetes but %s was built without the kubernetes engine: build it with "+
		"`go build -tags kubernetes ./cmd/codebridge` (or leave CODEBRIDGE_BIN unset)", path)
}
