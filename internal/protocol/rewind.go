package protocol

// Rewinding a session to a checkpoint (PROTOCOL.md, "Rewind"): a cell
// calls rewind(n); its [Done] carries Rewind; the host, still holding the
// session's turn, sends [Rewind] and sends nothing else to the runtime
// until [Rewound] comes back, from the checkpoint that took over or, when
// the rewind could not be done, from the runtime as it was.
const (
	TRewind  = "rewind"  // host -> runtime: carry out the rewind the last cell asked for
	TRewound = "rewound" // runtime -> host: what was restored, or why nothing was
)

// Rewind asks the runtime to go back N cells before the cell that asked
// (that one is undone too). N must be what the cell's [Done] asked for.
type Rewind struct {
	N int `json:"n"`
}

// Rewound answers [Rewind].
type Rewound struct {
	OK    bool   `json:"ok"`
	Cells int    `json:"cells"`           // cells rewound before the asking one
	Error string `json:"error,omitempty"` // why nothing changed, when not OK
	// Workspace says what became of /workspace; nil when not OK.
	Workspace *RewoundFiles `json:"workspace,omitempty"`
	// Names and Modules are the user's variables and imported modules
	// as restored (at most 30 each; More counts the rest).
	Names   []string `json:"names"`
	Modules []string `json:"modules"`
	More    int      `json:"more"`
	// Threads names the threads that ran at the checkpoint and do not
	// run after the rewind (a fork keeps only the thread that forks).
	Threads []string `json:"threads,omitempty"`
}

// RewoundFiles is what a rewind did to /workspace.
type RewoundFiles struct {
	Kept    bool   `json:"kept"`             // false: the checkpoint kept no files
	Reason  string `json:"reason,omitempty"` // why it kept none
	Error   string `json:"error,omitempty"`  // a restore that failed part way
	Files   int    `json:"files"`            // files the checkpoint holds
	Copied  int    `json:"copied"`           // files copied back
	Removed int    `json:"removed"`
}

func (Rewind) Type() string  { return TRewind }
func (Rewound) Type() string { return TRewound }
