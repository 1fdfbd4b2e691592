package protocol

import "encoding/json"

// Version is the protocol version this host speaks. Bump it when a frame or
// a method changes in a way the other side cannot ignore.
const Version = 2

// Frame is one message on the channel; Type is its "t".
type Frame interface{ Type() string }

// Frame types.
const (
	THello     = "hello"
	TExec      = "exec"
	TInterrupt = "interrupt"
	TResult    = "result"
	TReady     = "ready"
	TOut       = "out"
	TImage     = "image"
	TRPC       = "rpc"
	TDone      = "done"
	TLog       = "log"
	TPut       = "put"
	TStored    = "stored"
)

// ServerInfo announces one configured upstream server to the runtime.
type ServerInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Cwd is the directory the server's entry runs it in, as configured
	// (the Python bridge's describe_server reports it); empty when unset.
	Cwd string `json:"cwd,omitempty"`
}

// Hello is the host's first frame after the bootstrap.
type Hello struct {
	V       int          `json:"v"`
	Servers []ServerInfo `json:"servers"`
	// Files are written before the runtime says it is ready (skills,
	// packages every new sandbox gets); one that cannot be written is
	// reported in a [Log] frame, and the runtime starts anyway.
	Files []File `json:"files,omitempty"`
	// Idle, in seconds, makes the sandbox detachable: it outlives its
	// host, keeps its last cell for a host that sends [Resume], and ends
	// itself once Idle passes with no frame from a host and no cell's end.
	// 0: it ends when its channel does, as before.
	Idle float64 `json:"idle,omitempty"`
	// Resume is the SHA-256 (hex) of the key a new host proves itself
	// with in [Resume]; set with Idle.
	Resume string `json:"resume,omitempty"`
	// Checkpoints is how many checkpoints for rewind the runtime keeps
	// (PROTOCOL.md, "Rewind"); 0: it takes none, and rewind says that
	// checkpoints are off. Absent (nil): the runtime's default, 8, so an
	// older host's sandbox rewinds as before.
	Checkpoints *int `json:"checkpoints,omitempty"`
	// Pids is the process limit the host asked of the engine (its
	// --pids). A runtime whose own cgroup shows no pids limit (a
	// Kubernetes Pod's: the kubelet's podPidsLimit is on the Pod's cgroup,
	// above the container's) checks a fork against it (PROTOCOL.md,
	// "Fork"); 0: none is known.
	Pids int64 `json:"pids,omitempty"`
}

// File is a file the host puts into the sandbox. Path is absolute and
// under /workspace or /tmp, or relative to /workspace; the runtime refuses
// any other (and any path with ".."), creates the directories, and writes
// the file whole (to a temporary name, then renamed).
type File struct {
	Path string `json:"path"`
	Data []byte `json:"data"`           // base64 in JSON
	Mode uint32 `json:"mode,omitempty"` // permission bits; 0 means 0644
}

// Put asks the runtime to write files, at any time, even while a cell
// runs; [Stored] with the same ID answers it.
type Put struct {
	ID    int64  `json:"id"`
	Files []File `json:"files"`
}

// Stored answers [Put]: Error is empty when every file was written.
type Stored struct {
	ID    int64  `json:"id"`
	Error string `json:"error,omitempty"`
}

// Exec asks the runtime to run one cell.
type Exec struct {
	ID   int64  `json:"id"`
	Code string `json:"code"`
	// Limit is the output budget in characters per stream; 0 saves nothing.
	Limit int `json:"limit,omitempty"`
	// Render, when "toon", asks for a final value that is JSON data to be
	// shown as TOON text instead of its repr.
	Render string `json:"render,omitempty"`
	// Stale names servers whose cached tool lists the runtime must drop.
	Stale []string `json:"stale,omitempty"`
}

// Interrupt stops cell ID if it still runs.
type Interrupt struct {
	ID int64 `json:"id"`
}

// Result answers the [RPC] with the same ID.
type Result struct {
	ID    int64           `json:"id"`
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value,omitempty"`
	Error *RPCError       `json:"error,omitempty"`
}

// RPCError is why an RPC failed: its message, and its kind (see
// [ErrorKind]; an older host sends none, and an older runtime ignores it).
type RPCError struct {
	Type    string    `json:"type"`
	Message string    `json:"message"`
	Kind    ErrorKind `json:"kind,omitempty"`
}

// Ready is the runtime's answer to [Hello].
type Ready struct {
	V      int    `json:"v"`
	Python string `json:"python"`
}

// Out is a piece of a cell's output.
type Out struct {
	ID     int64  `json:"id"`
	Stream string `json:"stream"` // "stdout" or "stderr"
	Data   string `json:"data"`
}

// Image is a picture a cell shows.
type Image struct {
	ID   int64  `json:"id"`
	Mime string `json:"mime"`
	Data string `json:"data"` // base64
}

// RPC is a request of the runtime to the host, made by cell Exec.
type RPC struct {
	ID     int64           `json:"id"`
	Exec   int64           `json:"exec"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// Line is the line of the cell's code that made the request (the
	// innermost frame of the cell's code, or the line where the cell
	// waits for the task that made it); 0 when unknown. An approval
	// question shows the code around it.
	Line int `json:"line,omitempty"`
	// Batch and Size mark the requests the runtime sent together (in one
	// turn of the cell's event loop, asyncio.gather): Batch is their id,
	// unique in the cell, Size their number. The host asks the user about
	// those that need it once. 0: sent alone.
	Batch int64 `json:"batch,omitempty"`
	Size  int   `json:"size,omitempty"`
}

// Done ends cell ID; every [Out] of the cell came before it.
type Done struct {
	ID     int64  `json:"id"`
	Status string `json:"status"` // "ok", "error" or "interrupted"
	// Value is the repr of the final expression (or its TOON text, when
	// the exec asked and it is JSON data); nil when there was none.
	Value *string `json:"value"`
	// Error is the traceback, nil when the cell did not raise.
	Error *string           `json:"error"`
	Spill map[string]*Spill `json:"spill,omitempty"`
	// Rewind is the n of rewind(n) when the cell asked for one: the host
	// answers with a [Rewind] frame (see internal/protocol/rewind.go).
	Rewind int `json:"rewind,omitempty"`
	// Fork is true when the cell called fork(): a [Forked] frame follows
	// (internal/protocol/fork.go).
	Fork bool `json:"fork,omitempty"`
}

// Spill reports a stream that went over the output budget.
type Spill struct {
	Path  string `json:"path,omitempty"` // the file, or "" when it could not be made
	Chars int64  `json:"chars"`          // characters in the file
	Error string `json:"error,omitempty"`
}

// Log is a diagnostic for the host's log.
type Log struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
}

// Unknown is a frame of a type this host does not know; it is ignored.
type Unknown struct{ T string }

func (Hello) Type() string     { return THello }
func (Exec) Type() string      { return TExec }
func (Interrupt) Type() string { return TInterrupt }
func (Result) Type() string    { return TResult }
func (Ready) Type() string     { return TReady }
func (Out) Type() string       { return TOut }
func (Image) Type() string     { return TImage }
func (RPC) Type() string       { return TRPC }
func (Done) Type() string      { return TDone }
func (Log) Type() string       { return TLog }
func (Put) Type() string       { return TPut }
func (Stored) Type() string    { return TStored }
func (u Unknown) Type() string { return u.T }
