package protocol

// The frames of a resumed channel (pyruntime/PROTOCOL.md, "Resuming the
// channel"). A sandbox started detachable ([Hello.Idle], [Hello.Resume])
// outlives the bridge that started it; a bridge that adopts it runs the
// relay in it (pyruntime.Relay) and sends [Resume] as the relay's first
// line, and the runtime answers with [Resumed]: where it was.
const (
	TResume  = "resume"  // host -> runtime: a new host took over the channel
	TResumed = "resumed" // runtime -> host: where the runtime was
	TMoved   = "moved"   // runtime -> old host: another host took the channel over
)

// Resume is a new host's first line to a detachable runtime, through the
// relay: Key is the key whose SHA-256 (hex) the hello's Resume carried.
// The runtime closes a connection whose key is wrong.
type Resume struct {
	Key string `json:"key"`
}

// Resumed is the runtime's answer to [Resume], its first frame to the new
// host; the frames after it are the new host's (the rest of a running
// cell's among them).
type Resumed struct {
	V      int    `json:"v"`
	Python string `json:"python"`
	// Last is the largest exec id the runtime got: a new host numbers its
	// cells after it.
	Last int64 `json:"last"`
	// Yours is the largest exec id the runtime read from the channel it
	// resumed on (0: a new one): a host that takes its own channel back
	// learns whether the runtime got its last cell before another host
	// took the channel over (sent later, it was dropped unread).
	Yours int64 `json:"yours"`
	// Lost is how many requests the previous host never answered; the
	// runtime failed them (after this frame), saying whether they ran is
	// unknown.
	Lost int `json:"lost"`
	// Cell is the cell that runs, or the last one that ran (until the next
	// exec); nil when none ran.
	Cell *ResumedCell `json:"cell"`
	// Calls is the ledger of that cell's gated requests (tool calls,
	// resource reads, prompts) as the runtime saw them: the requests the
	// previous host never answered are cancelled (whether they ran is
	// unknown). Nil when the cell made none.
	Calls *CellCalls `json:"calls"`
}

// ResumedCell is a cell as a resumed runtime reports it.
type ResumedCell struct {
	ID int64 `json:"id"`
	// Running is true while the cell runs: its later frames, its done frame
	// among them, come on the new channel.
	Running bool `json:"running"`
	// Stdout and Stderr are the output sent so far, up to 64 Ki characters
	// a stream (KEEP_MAX in pyruntime/mcp/_channel.py); Dropped counts the
	// characters beyond that.
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	Dropped int64  `json:"dropped"`
	// Done is the fields of the cell's done frame once it ended (whether or
	// not a host read it), else nil.
	Done *Done `json:"done"`
}

// Moved is a detachable runtime's last frame on a channel that another
// host resumed: the host that reads it no longer holds the sandbox.
type Moved struct{}

func (Resume) Type() string  { return TResume }
func (Moved) Type() string   { return TMoved }
func (Resumed) Type() string { return TResumed }
