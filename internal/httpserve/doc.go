// Package httpserve serves codebridge to a team over MCP's streamable
// HTTP transport: each MCP session gets its own sandbox (the bridge makes
// it on the session's first run_python and removes it when the session
// ends or stays idle too long), at most a set number of sessions are open
// at once, and at most a smaller number of one user's (the name of a
// token, or an OAuth principal); a user's new session at a limit ends
// that user's least recently used idle session, and is refused only when
// there is none. Every request passes, in order: the
// body's deadline, the Host and Origin checks (DNS rebinding, browsers),
// the bearer token (a static token, or with OAuth an access token that
// package oauth validates; then the go-sdk's auth middleware, behind a
// 401 or 403 that carries its challenge), the
// reading of the whole body, the session limit, then the go-sdk's
// streamable handler. Nothing holds a lock while it waits on a client.
// /healthz answers without a token; /metrics (Prometheus) needs one when
// tokens or OAuth are configured; with OAuth, the protected resource
// metadata (RFC 9728) is public.
//
// Binding an address other than loopback without tokens or OAuth is refused: the
// code the server runs is whatever its clients send.
package httpserve
