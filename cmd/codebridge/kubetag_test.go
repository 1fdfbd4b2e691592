package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox"
)

// TestKubernetesEngineOptIn: a build without the tag kubernetes refuses
// the engine at once, by flag and by environment, saying how to get a
// build with it; a build with the tag takes it. --namespace and
// --seccomp-localhost are taken in both builds.
func TestKubernetesEngineOptIn(t *testing.T) {
	for name, c := range map[string]struct {
		argv []string
		env  map[string]string
	}{
		"flag": {argv: []string{"--engine", "kubernetes", "--namespace", "ns", "--seccomp-localhost", "codebridge.json"}},
		"env":  {env: map[string]string{"CODEBRIDGE_ENGINE": "kubernetes"}},
	} {
		s, err := parseFlags(c.argv, c.env)
		if sandbox.KubernetesBuilt {
			if err != nil || s.engine != sandbox.EngineKubernetes {
				t.Errorf("%s: the kubernetes build refused the engine: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, sandbox.ErrKubernetesNotBuilt) ||
			!strings.Contains(err.Error(), sandbox.KubernetesInstall) {
			t.Errorf("%s: the default build took --engine kubernetes or did not say how to get it: %v", name, err)
		}
	}
	if _, err := parseFlags([]string{"--namespace", "ns", "--seccomp-localhost", "codebridge.json"}, nil); err != nil {
		t.Errorf("the Kubernetes settings are refused without the engine: %v", err)
	}
}
