package upstream

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"strings"
)

// Error is an upstream server that failed: it did not start, or it exited
// during a call. Its Error method says which server and what failed, and
// is what the sandbox and the model may read. What could hold secrets
// (the last lines of the server's stderr, where a server may log its
// token, its command and the config file's path) is kept apart: Detail
// gives it, for the host log and `codebridge doctor`.
type Error struct {
	// Server is the server's name as configured.
	Server string
	// What says what failed, such as "could not start".
	What string
	// Err is the cause, in words safe to show the sandbox.
	Err error

	cause   error  // the cause in full, which may quote the command
	stderr  string // the last lines of the server's stderr
	command string // the configured command line, for a stdio server
	source  string // the config file that defines the server
}

// Error says which server failed, what failed and why, without the stderr
// tail, command or paths.
func (e *Error) Error() string {
	return fmt.Sprintf("server %q %s: %v (the bridge's log, or `codebridge doctor`, has the server's error output)", e.Server, e.What, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Detail returns what only the host may see: the full cause, the last
// lines of the server's stderr, and the command and config file to check.
func (e *Error) Detail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q %s: %v", e.Server, e.What, e.cause)
	if e.stderr != "" {
		b.WriteString("; its stderr ends with:\n" + e.stderr)
	}
	if e.command != "" {
		fmt.Fprintf(&b, "\n(check the command line `%s` in %s, or run it by hand to see why)", e.command, e.source)
	} else if e.source != "" {
		fmt.Fprintf(&b, "\n(check its entry in %s)", e.source)
	}
	return b.String()
}

// LogValue shows the host-only detail in the host log.
func (e *Error) LogValue() slog.Value { return slog.StringValue(e.Detail()) }

// HostDetail returns err's message for the host's eyes only (the log,
// `codebridge doctor`): an upstream [Error]'s Detail, with its stderr tail,
// command and config path, or err.Error() for other errors.
func HostDetail(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Detail()
	}
	return err.Error()
}

// What else a request to an upstream can fail with, besides an [Error]
// (the server did not start, or exited): errors.Is finds these in what
// [Pool.Get], [Server.Call] and the other requests return, whose messages
// they leave as they are.
var (
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer = errors.New("no such MCP server")
	// ErrTimedOut: the request ran past the server's call time limit.
	ErrTimedOut = errors.New("timed out")
	// ErrFailed: the server answered the request with an error, or the
	// exchange failed (not a crash: that is an [Error]).
	ErrFailed = errors.New("the server failed the request")
)

// marked is err, with err's message, that errors.Is also finds to be mark.
type marked struct{ err, mark error }

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.mark} }

// mark returns err marked as mark (one of the errors above).
func mark(err, mark error) error { return &marked{err: err, mark: mark} }

// errStartCommand marks an error starting a stdio server's command; its
// message names the command (and may name its path or cwd).
var errStartCommand = errors.New("starting the command")

// safeCause returns err in words the sandbox may read: an error starting
// the command names neither the command nor a path.
func safeCause(err error) error {
	switch {
	case !errors.Is(err, errStartCommand):
		return err
	case errors.Is(err, exec.ErrNotFound):
		return errors.New("its command was not found")
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("its command, or the directory it runs in, was not found")
	}
	return errors.New("its command could not be run")
}
