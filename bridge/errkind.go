package bridge

import (
	"context"
	"errors"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/packages"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// errorKind is the kind the sandbox is told an RPC's error is: the one
// place the host's errors are mapped to the closed set of
// [protocol.ErrorKind], by their types and sentinels (errors.Is and As),
// never by their text. An error of no known kind is
// [protocol.KindInternal]. Only the kind comes from here; the message the
// sandbox reads stays err's own (an [upstream.Error]'s, for one, leaves
// out the server's stderr and command).
func errorKind(err error) protocol.ErrorKind {
	var denied *gate.DeniedError
	var install *packages.Error
	var down *upstream.Error
	var wire *jsonrpc.Error
	switch {
	case errors.As(err, &denied):
		return deniedKind(denied)
	case errors.As(err, &install):
		return protocol.KindPackage
	case errors.Is(err, upstream.ErrUnknownServer):
		return protocol.KindUnknownTool
	case errors.Is(err, upstream.ErrTimedOut):
		return protocol.KindTimeout
	case errors.As(err, &down): // before a deadline: a start that took too long is the server's failure
		return protocol.KindUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.KindTimeout
	case errors.As(err, &wire) && wire.Code == jsonrpc.CodeInvalidParams:
		return protocol.KindInvalidArguments
	case errors.As(err, &wire), errors.Is(err, upstream.ErrFailed):
		return protocol.KindUpstream
	}
	return protocol.KindInternal
}

// deniedKind is the kind of a request the gate denied.
func deniedKind(e *gate.DeniedError) protocol.ErrorKind {
	switch {
	case errors.Is(e, gate.ErrNotApproved):
		return protocol.KindDeclined
	case errors.Is(e, gate.ErrUnlisted):
		return protocol.KindUnknownTool
	case errors.Is(e, gate.ErrBadParams):
		return protocol.KindInvalidArguments
	}
	return protocol.KindDenied
}

// withKind gives err its kind, for the answer to the RPC (a nil err stays
// nil).
func withKind(err error) error {
	if err == nil {
		return nil
	}
	return &protocol.KindError{Kind: errorKind(err), Err: err}
}
