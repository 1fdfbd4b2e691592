package protocol

// The frames of the direct channel's start-up (pyruntime/PROTOCOL.md,
// "The direct channel"). The host's first frame after the bootstrap is
// [Channel] when the sandbox can reach the bridge's socket; the runtime
// then connects and sends [Connect] as the socket's first line, or, when it
// cannot, answers with a [Channel] that has Error on its stdout, and the
// frames stay on stdin and stdout.
const (
	TChannel = "channel" // host -> runtime: where the socket is; runtime -> host: why not
	TConnect = "connect" // runtime -> host, the socket's first line: the secret
)

// Channel offers the runtime the direct channel (Path and Secret, from the
// host), or says why the runtime could not take it (Error, from the
// runtime).
type Channel struct {
	// Path is the bridge's Unix socket as the sandbox sees it.
	Path string `json:"path,omitempty"`
	// Secret is 32 random bytes in hex, for one connection.
	Secret string `json:"secret,omitempty"`
	// Error says why the runtime did not connect.
	Error string `json:"error,omitempty"`
}

// Connect is the first line the runtime writes on the socket: the secret
// the host's [Channel] frame carried, which proves it is the runtime.
type Connect struct {
	Secret string `json:"secret"`
}

func (Channel) Type() string { return TChannel }
func (Connect) Type() string { return TConnect }
