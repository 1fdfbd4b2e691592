// Package metrics holds codebridge's Prometheus metrics (sessions, cells,
// requests from the sandbox, their latencies, sandbox restarts, the warm
// pool), kept in a registry of their own and served on /metrics when
// codebridge serves HTTP. A nil *Metrics records nothing, so stdio and
// the command line pay nothing for it.
package metrics
