// Package bridge is codebridge's MCP server: the one tool, run_python, that
// runs the agent's code in the sandbox, and the answers to the requests the
// code makes of the upstream servers while it runs.
//
// Files by concept: tool.go holds the tool's definition (kept small and
// independent of what is configured), bridge.go the run_python handler,
// progress.go the progress notifications of long runs, render.go the text
// the model reads, and rpc.go the requests the sandbox runtime sends
// (list_tools, call_tool, ...; see pyruntime/PROTOCOL.md), resources.go
// those for resources and prompts, redact_listing.go the redaction of every
// listing of what upstreams offer, client.go the answers to what upstreams
// ask of the MCP client (sampling, elicitation, roots; redacted for the
// client, with real values put back into its answers), and logging.go the
// log messages that reach the client.
package bridge
