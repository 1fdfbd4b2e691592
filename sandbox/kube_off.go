//go:build !kubernetes

package sandbox

import (
	"context"
	"log/slog"
)

// KubernetesBuilt says whether this build has the kubernetes engine: not
// without the build tag kubernetes (the engine is kube*.go).
const KubernetesBuilt = false

// connectKube refuses the kubernetes engine in a build without it.
func connectKube(context.Context, EngineOptions, func(string) string, *slog.Logger) (Engine, error) {
	return nil, ErrKubernetesNotBuilt
}
