//go:build !kubernetes

package main

import (
	"context"
	"errors"
)

// kubeBuilt says this bench cannot measure a cluster: it was built
// without the tag kubernetes (kube.go).
const kubeBuilt = false

func (e *env) measureKubeNode(context.Context) ([]row, error) {
	return nil, errors.New("built without the tag kubernetes: run go run -tags kubernetes ./bench -engine kubernetes (make bench-kube)")
}

func (e *env) measureKubeChannels(ctx context.Context) ([]row, error) { return e.measureKubeNode(ctx) }
