package protocol

import "errors"

// ErrorKind says what kind of failure an RPC's error is, so that code in
// the sandbox can catch one kind (`except PermissionDenied`) instead of
// reading messages. The set is closed: the host maps every error to one of
// these once, where it answers the RPC (bridge/errkind.go), and the runtime
// raises one exception class per kind (pyruntime/mcp/_results.py). A kind
// the runtime does not know, or none (an older host), raises BridgeError.
type ErrorKind string

// The kinds of an [RPCError].
const (
	// KindDenied: the policy does not allow the request.
	KindDenied ErrorKind = "denied"
	// KindDeclined: the request needed the user's approval and did not
	// get it (the user declined, did not answer in time, or the client
	// cannot ask).
	KindDeclined ErrorKind = "declined"
	// KindTimeout: the request ran past its time limit.
	KindTimeout ErrorKind = "timeout"
	// KindUnknownTool: the request names no configured server, or a tool
	// its server does not list.
	KindUnknownTool ErrorKind = "unknown_tool"
	// KindInvalidArguments: the upstream, or the gate, refused the
	// request's arguments.
	KindInvalidArguments ErrorKind = "invalid_arguments"
	// KindUpstream: the upstream server answered the request with an
	// error, or failed on the way.
	KindUpstream ErrorKind = "upstream"
	// KindUnavailable: the upstream server could not start, or exited.
	KindUnavailable ErrorKind = "unavailable"
	// KindPackage: an on-demand install was refused or failed.
	KindPackage ErrorKind = "package"
	// KindInternal: anything else (a fault of the host or of the runtime).
	KindInternal ErrorKind = "internal"
)

// KindError is an error with the kind the host gave it. Its message is
// the wrapped error's.
type KindError struct {
	Kind ErrorKind
	Err  error
}

func (e *KindError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *KindError) Unwrap() error { return e.Err }

// ErrorOf is the error an RPC is answered with when err ended it: err's
// message, and the kind of the first [KindError] in its chain
// ([KindInternal] when there is none).
func ErrorOf(err error) *RPCError {
	kind := KindInternal
	var ke *KindError
	if errors.As(err, &ke) {
		kind = ke.Kind
	}
	return &RPCError{Type: "BridgeError", Message: err.Error(), Kind: kind}
}
