//go:build !kubernetes

package e2e

import "errors"

// kubeSetup refuses a kubernetes run of a test binary built without the
// tag kubernetes: its own engine connections (and the Kubernetes tests)
// are not compiled in.
func kubeSetup() error {
	if !onKubernetes() {
		return nil
	}
	return errors.New("CODEBRIDGE_ENGINE=kubernetes needs the tests built with the engine: go test -tags kubernetes ./e2e")
}
