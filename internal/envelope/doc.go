// Package envelope finds the top-level members of one JSON-RPC message
// (jsonrpc, id, method, params, result, error) without decoding or copying
// them: the spans of the bytes as they came.
//
// Both of the bridge's own newline-delimited JSON-RPC connections use it:
// the one to a stdio upstream (internal/upstream/lineconn.go), which passes results
// through undecoded, and the one it serves its MCP client on
// (bridge/stdio.go), which hands the go-sdk a request whose params are
// still the bytes the client sent. The go-sdk's decoder allocates a
// 32 KiB buffer for every message it decodes, however small.
package envelope
