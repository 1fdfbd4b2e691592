package engine

import (
	"context"
	"errors"
)

// Holder is an engine on which several bridge replicas share the
// sandboxes of session handles and take turns on each (Kubernetes, with
// a Lease per handle): a replica holds a handle only while a call on it
// runs, so that any replica may serve its next call. The engines of one
// machine do not implement it: there, container labels and "the newer
// channel wins" are enough.
type Holder interface {
	// Hold makes this replica the holder of the handle whose label
	// digest is given, for one call. last is the Hold this replica had
	// of the handle before (nil when none), from which Hold tells whether
	// another replica held it since ([Hold.Moved]) and can retake it with
	// one write when nothing changed. While another replica (or another
	// call of this one) holds it, Hold fails at once with an error that
	// wraps [ErrHeld]: the caller waits and asks again.
	Hold(ctx context.Context, digest string, last Hold) (Hold, error)
	// Drop removes what marks the handle whose label digest is given as
	// held (its Lease), held or not: its handle ended.
	Drop(ctx context.Context, digest string) error
}

// Hold is a handle held by this replica, renewed until Release or its
// loss.
type Hold interface {
	// Moved reports whether another replica held the handle since this
	// replica's last Hold of it (or this replica never held it, and the
	// handle was not new): this replica's channel to its sandbox, if it
	// has one, is stale and must be made again.
	Moved() bool
	// Lost is closed once this replica no longer holds the handle:
	// another replica took it, or it could not be renewed in time, or
	// Release ran. The replica must stop using the handle's channel.
	Lost() <-chan struct{}
	// Release lets the handle go so that any replica may take it at once;
	// the handle lives on.
	Release(ctx context.Context) error
}

// ErrHeld is what [Holder.Hold] wraps while another replica, or another
// call of this one, holds the handle.
var ErrHeld = errors.New("sandbox: another bridge replica holds this session handle now")
