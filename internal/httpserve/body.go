package httpserve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxBody is the largest request body read: the go-sdk's own bound, which
// its handler applies again.
const maxBody = mcp.DefaultMaxRequestBodyBytes

// hasBody reports whether r comes with a body to read.
func hasBody(r *http.Request) bool { return r.Body != nil && r.Body != http.NoBody }

// bodyDeadline bounds the time a request's body may take to arrive: it
// sets the connection's read deadline when the request starts, and
// readBody clears it once the body is in. A request answered without its
// body read (one without a token) keeps the deadline, so that the
// server's reading of the rest (to reuse the connection) ends too. The
// deadline is per request and only for requests with a body, not the
// server's ReadTimeout: that one stays on the connection while the answer
// streams (and on a bodiless GET stream from its start), and its expiry
// cancels the request's context, ending any answer tied to it.
func (s *Server) bodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasBody(r) {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
		}
		h.ServeHTTP(w, r)
	})
}

// readBody reads a request's whole body before h sees it, within the
// deadline bodyDeadline set, which it then clears; r.GetBody gives it
// again; a body that does not
// arrive in time, or is too large, is answered here. So nothing after it
// (the session limit) waits on the network.
func (s *Server) readBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasBody(r) {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			s.badBody(w, r, err)
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		h.ServeHTTP(w, r)
	})
}

// badBody answers a request whose body could not be read, and closes its
// connection.
func (s *Server) badBody(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close")
	var tooLarge *http.MaxBytesError
	var nerr net.Error
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the request's body is larger than %d bytes", maxBody), http.StatusRequestEntityTooLarge)
	case errors.As(err, &nerr) && nerr.Timeout():
		s.log.Warn("ended a request whose body did not arrive in time", "user", userID(r), "remote", r.RemoteAddr, "body_timeout", s.opts.BodyTimeout)
		http.Error(w, fmt.Sprintf("the request's body did not arrive within %s (--body-timeout): send it whole, at once", s.opts.BodyTimeout), http.StatusRequestTimeout)
	default:
		s.log.Debug("reading a request's body failed", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "reading the request's body failed: "+err.Error(), http.StatusBadRequest)
	}
}
