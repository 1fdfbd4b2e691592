package sandbox

import "context"

// sessionKey carries the session a cell runs in, in the ctx its requests
// are answered with.
type sessionKey struct{}

// Current is the session whose cell made the request that ctx serves (the
// ctx [Host.Answer] gets), or nil: a host answering a request can write
// files into that sandbox with [Session.Put] (the wheels of an install).
func Current(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}
