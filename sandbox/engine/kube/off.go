//go:build !kubernetes

package kube

import (
	"context"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// Built says whether this build has the kubernetes engine: not without
// the build tag kubernetes (the engine is in this package's other files).
const Built = false

// Connect refuses the kubernetes engine in a build without it.
func Connect(context.Context, engine.Options) (engine.Engine, error) {
	return nil, ErrNotBuilt
}
