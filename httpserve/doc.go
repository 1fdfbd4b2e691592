// Package httpserve serves codebridge to a team over MCP's streamable
// HTTP transport: each MCP session gets its own sandbox (the bridge makes
// it on the session's first run_python and removes it when the session
// ends or stays idle too long), at most a set number of sessions are open
// at once, and every request passes, in order: the Host and Origin checks
// (DNS rebinding, browsers), the bearer token (the go-sdk's auth
// middleware), the session limit, then the go-sdk's streamable handler.
// /healthz answers without a token; /metrics (Prometheus) needs one when
// tokens are configured.
//
// Binding an address other than loopback without tokens is refused: the
// code the server runs is whatever its clients send.
package httpserve
