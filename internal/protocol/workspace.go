package protocol

// Frames and RPC methods of skills and of the workspace (files out): the
// host reads a file of the sandbox with [Get], answered by [Got]; the
// runtime saves, lists and deletes skills and shares files with the RPCs
// below. pyruntime/PROTOCOL.md describes them.

// Frame types of the workspace.
const (
	TGet = "get" // host -> runtime: read a file
	TGot = "got" // runtime -> host: its content, or why not
)

// Get asks the runtime for the content of one file of the workspace, at
// any time (even while a cell runs); [Got] with the same ID answers it.
// The runtime refuses a path outside /workspace, with "..", or that is a
// symlink or not a regular file, and a file larger than Max bytes.
type Get struct {
	ID   int64  `json:"id"`
	Path string `json:"path"`
	Max  int64  `json:"max"`
}

// Got answers [Get]: Data is the file's content, or Error says why there
// is none (Size is then the file's size when it was too large, else 0).
type Got struct {
	ID    int64  `json:"id"`
	Data  []byte `json:"data,omitempty"` // base64 in JSON
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
	// Missing is true when the file does not exist.
	Missing bool `json:"missing,omitempty"`
}

func (Get) Type() string { return TGet }
func (Got) Type() string { return TGot }

// RPC methods of skills and the workspace.
const (
	MSaveSkill   = "save_skill"
	MListSkills  = "list_skills"
	MDeleteSkill = "delete_skill"
	MShare       = "share"
)

// SaveSkillParams are the parameters of save_skill: Source is Python that
// compiled in the sandbox and defines Name at top level. The answer is the
// saved [SkillInfo].
type SaveSkillParams struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	Description string `json:"description,omitempty"`
}

// Target is the skill the request saves: it changes what every later
// sandbox starts with, so the gate sees it.
func (p SaveSkillParams) Target() Target { return Target{Kind: "skill", Name: p.Name} }

// ListSkillsParams are the parameters of list_skills (none); the answer is
// a list of [SkillInfo], by name.
type ListSkillsParams struct{}

// DeleteSkillParams are the parameters of delete_skill; the answer is the
// deleted [SkillInfo].
type DeleteSkillParams struct {
	Name string `json:"name"`
}

// Target is the skill the request deletes.
func (p DeleteSkillParams) Target() Target { return Target{Kind: "skill", Name: p.Name} }

// SkillInfo describes one saved skill.
type SkillInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Size        int    `json:"size"`            // bytes of source
	Saved       string `json:"saved,omitempty"` // RFC 3339
	// Team marks a skill the host published for everyone: read-only.
	Team bool `json:"team,omitempty"`
}

// ShareParams are the parameters of share: Path is a regular file under
// /workspace (absolute), which the runtime checked. The answer is a
// [Shared].
type ShareParams struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	MIME string `json:"mime,omitempty"`
}

// Shared answers share: the resource the run_python result links to.
type Shared struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
	MIME string `json:"mime"`
	Size int64  `json:"size"`
}
