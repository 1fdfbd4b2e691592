// Command soak runs codebridge for a bounded time (ten minutes by default)
// under a mix of cells: plain output, proxied upstream calls, gathered
// calls, upstream crashes, timeouts and sandbox crashes that force a
// restart. It samples the bridge's resident memory, open descriptors and
// threads from /proc, and the engine's count of the bridge's containers,
// and prints where each curve started, peaked and ended, so that a leak
// shows as an end far above the start. It is `make soak`, not part of CI.
package main
