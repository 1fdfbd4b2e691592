// Package upstream keeps warm MCP client sessions to the servers the user
// configured, and answers the questions the sandbox asks about them.
//
// A [Pool] holds one [Server] per configured entry. A server starts on its
// first use (a tool list, a call, or being named in run_python's servers),
// stays running between calls, and is started again on the next use after
// it crashes. Its tool list is cached until the server says it changed
// (notifications/tools/list_changed), and kept in the state directory
// ([CatalogueStore]) so that a new bridge's search reads it without
// starting the server. Every call has a time limit and is cancelled with
// the context it was made under.
//
// Stdio servers run in their own process group, so stopping one also stops
// the children launchers such as npx start; the last lines of a server's
// stderr are kept for the host's eyes: an [Error] tells the sandbox which
// server failed and how, and keeps the stderr tail, command line and config
// path in its Detail (see [HostDetail]) for the log and doctor. A stdio server inherits only a
// minimal set of the bridge's environment variables (see inheritedEnv)
// plus its configured env, and that environment stays on the host: nothing
// here is ever sent into the sandbox except tool results.
//
// A Server is composed of parts with one job each: the supervisor keeps
// its session (start, restart, backoff, stop) and runs requests on it;
// the tool catalogue keeps its tools with their generation and exact
// lookup; the word index keeps their search words; the offers cache keeps
// its resources and prompts for search; the saved listing keeps both in
// the state directory; the relister lists them in the background (for a
// search, after a change the server announced); the call watchers tie progress
// and log messages to the call they belong to; the downlink answers what
// the server asks of its client.
package upstream
