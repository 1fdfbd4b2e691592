package protocol

import (
	"encoding/json"
	"strings"
)

// RPC methods the runtime may call. Each has its own parameter type; the
// answer types are below.
const (
	MListServers  = "list_servers"
	MListTools    = "list_tools"
	MCallTool     = "call_tool"
	MStartServers = "start_servers"
	MSearchTools  = "search_tools"
)

// ListServersParams are the parameters of list_servers (none).
type ListServersParams struct{}

// ServerEntry is one server in the answer to list_servers.
type ServerEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Running     bool   `json:"running"`
}

// ListToolsParams are the parameters of list_tools; it starts the server.
// The answer is the server's tools as MCP Tool objects, in the server's
// order, where each tool the policy denies whatever happens is a
// [DeniedTool] instead. What the upstream chose in each entry comes
// redacted; a tool whose name redaction would change is left out.
type ListToolsParams struct {
	Server string `json:"server"`
}

// DeniedTool stands in a list_tools answer for a tool the policy denies:
// its name and the error a call to it gets (which names the rule and its
// file). The runtime leaves it out of every listing and raises Denied
// when code names it.
type DeniedTool struct {
	Name   string `json:"name"`
	Denied string `json:"denied"`
}

// Observed is what the host saw a tool without an outputSchema return,
// given with the tool in the answer to list_tools ("observed"): how many
// results, how many of them errors (isError, not in the shape), and the
// shape of the others in a compact notation (package shapes), whole and
// on one line.
type Observed struct {
	Calls  int    `json:"calls"`
	Errors int    `json:"errors,omitempty"`
	Shape  string `json:"shape"`
	Line   string `json:"line"`
}

// CallToolParams are the parameters of call_tool. The answer is the
// upstream's CallToolResult as JSON.
type CallToolParams struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// StartServersParams are the parameters of start_servers.
type StartServersParams struct {
	Servers []string `json:"servers"`
}

// StartEntry is one server in the answer to start_servers.
type StartEntry struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// SearchToolsParams are the parameters of search_tools.
type SearchToolsParams struct {
	Query  string `json:"query"`
	Limit  int    `json:"limit"`
	Detail string `json:"detail"` // "summary" or "full"
}

// SearchHit is one ranked tool in the answer to search_tools.
type SearchHit struct {
	Server       string  `json:"server"`
	Tool         string  `json:"tool"`
	Description  string  `json:"description"`
	Score        float64 `json:"score"`
	InputSchema  any     `json:"inputSchema,omitempty"`
	OutputSchema any     `json:"outputSchema,omitempty"`
	// Skill is true for a saved skill (Tool is its name; Server is empty).
	Skill bool `json:"skill,omitempty"`
	// Kind is "resource", "template" or "prompt" for a hit that is not a
	// tool (Tool then holds its name); URI is a resource's URI or a
	// template's URI template.
	Kind string `json:"kind,omitempty"`
	URI  string `json:"uri,omitempty"`
	// Returns is a tool's observed shape on one line (see [Observed]).
	Returns string `json:"returns,omitempty"`
	// Stale says why the hit may be out of date: the search read its
	// server from a listing saved before the server's entry changed, and
	// the server is being listed again.
	Stale string `json:"stale,omitempty"`
}

// SearchNote comes first in the answer to search_tools when the query was
// cut to its budget: it says what was cut.
type SearchNote struct {
	Note string `json:"note"`
}

// SearchDown names a server that could not be searched; such entries come
// after the hits in the answer to search_tools.
type SearchDown struct {
	Server      string `json:"server"`
	Unavailable string `json:"unavailable"`
}

// Target is what a request acts on, for the host's gate (policy,
// approval, audit): Kind is "tool", "resource", "prompt" or "package";
// Server and Name say which. Requests about codebridge itself (listing
// servers, searching) have none.
type Target struct {
	Kind   string
	Server string
	Name   string
}

// Targeted is implemented by the parameters of requests that act on
// something, so that one gate sees every such request the same way.
type Targeted interface{ Target() Target }

// Target is the tool the call acts on.
func (p CallToolParams) Target() Target { return Target{Kind: "tool", Server: p.Server, Name: p.Tool} }

// MInstall asks the host to fetch wheels for the sandbox (on-demand
// packages): the host resolves the requirements for the sandbox's Python,
// writes the wheels into the sandbox with [Put], then answers with an
// [InstallAnswer]; the runtime unpacks them.
const MInstall = "install"

// InstallParams are the parameters of install: the requirements ("pandas",
// "matplotlib>=3.8") and what the sandbox's Python can run.
type InstallParams struct {
	Requirements   []string `json:"requirements"`
	Upgrade        bool     `json:"upgrade,omitempty"` // resolve again instead of using the cache
	Python         string   `json:"python"`            // "3.11"
	Implementation string   `json:"implementation"`    // "cp"
	ABIs           []string `json:"abis"`              // "cp311"
	Platforms      []string `json:"platforms"`         // "manylinux_2_36_x86_64", ...
	// Installed are the wheel files the sandbox has installed already; the
	// host does not send them again.
	Installed []string `json:"installed,omitempty"`
}

// Target is the packages the install asks for.
func (p InstallParams) Target() Target {
	return Target{Kind: "package", Name: strings.Join(p.Requirements, " ")}
}

// InstallAnswer answers install: the wheels are in the sandbox at Path.
type InstallAnswer struct {
	Wheels []InstalledWheel `json:"wheels"`
	// Cached is true when the host answered from its cache, without pip.
	Cached bool `json:"cached"`
	// Downloaded is the bytes pip downloaded for this install (0 when
	// cached); Sent is the bytes of wheels written into the sandbox.
	Downloaded int64 `json:"downloaded"`
	Sent       int64 `json:"sent"`
	TookMS     int64 `json:"took_ms"`
}

// InstalledWheel is one wheel the host wrote into the sandbox.
type InstalledWheel struct {
	File string `json:"file"`
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// RPC methods for what an upstream offers besides tools (issue 15). The
// list methods answer one page; the runtime asks again with the page's
// nextCursor until there is none.
const (
	MListResources         = "list_resources"
	MListResourceTemplates = "list_resource_templates"
	MReadResource          = "read_resource"
	MListPrompts           = "list_prompts"
	MGetPrompt             = "get_prompt"
)

// ListPageParams are the parameters of list_resources,
// list_resource_templates and list_prompts: the server and the cursor of
// the page ("" for the first). The answer is the upstream's list result as
// JSON ({resources|resourceTemplates|prompts, nextCursor?}); it starts the
// server.
type ListPageParams struct {
	Server string `json:"server"`
	Cursor string `json:"cursor,omitempty"`
}

// ListResourcesParams are the parameters of list_resources.
type ListResourcesParams ListPageParams

// ListResourceTemplatesParams are the parameters of list_resource_templates.
type ListResourceTemplatesParams ListPageParams

// ListPromptsParams are the parameters of list_prompts.
type ListPromptsParams ListPageParams

// ReadResourceParams are the parameters of read_resource. The answer is
// the upstream's ReadResourceResult as JSON ({contents: [{uri, mimeType?,
// text | blob}]}), passed through undecoded from a stdio upstream.
type ReadResourceParams struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// GetPromptParams are the parameters of get_prompt. The answer is the
// upstream's GetPromptResult as JSON ({description?, messages}).
type GetPromptParams struct {
	Server    string            `json:"server"`
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

// Target is the resource the read acts on.
func (p ReadResourceParams) Target() Target {
	return Target{Kind: "resource", Server: p.Server, Name: p.URI}
}

// Target is the prompt the request acts on.
func (p GetPromptParams) Target() Target {
	return Target{Kind: "prompt", Server: p.Server, Name: p.Name}
}

// MSessions asks for the sandbox sessions of the cell's principal that
// have handles (MCP 2026-07-28), as tags (never handles).
const MSessions = "sessions"

// SessionsParams are the parameters of sessions (none).
type SessionsParams struct{}

// MEndSession ends one of them: its sandbox is removed.
const MEndSession = "end_session"

// EndSessionParams name the session to end: a tag sessions gave, or the
// handle.
type EndSessionParams struct {
	Session string `json:"session"`
}

// MCalls asks for the ledger of the cell that sends it and of the cell
// before it: the requests each made that act on something (tool calls,
// resource reads, prompts, installs), in order, and where each stands.
const MCalls = "calls"

// CallsParams are the parameters of calls (none).
type CallsParams struct{}

// CallsAnswer answers calls. Previous is null when the session ran no
// cell before this one.
type CallsAnswer struct {
	Current  CellCalls  `json:"current"`
	Previous *CellCalls `json:"previous"`
}

// CellCalls is one cell's ledger: how many calls it made, the last of
// them in detail (at most gate.MaxCellCalls) and the states of the
// earlier ones counted ({"ok": 80}).
type CellCalls struct {
	Total   int            `json:"total"`
	Calls   []LedgerCall   `json:"calls"`
	Earlier map[string]int `json:"earlier"`
}

// LedgerCall is one call in a [CellCalls]. State is running, ok,
// tool_error, error (ErrorKind says which kind), cancelled (its cell
// ended before the upstream answered: the upstream may have acted) or
// denied (ErrorKind: denied, declined, unknown_tool or
// invalid_arguments). Tool is the tool's name, or for another kind the
// resource's URI, the prompt's name or the requirements.
type LedgerCall struct {
	Seq        int     `json:"seq"`
	Kind       string  `json:"kind"`
	Server     string  `json:"server"`
	Tool       string  `json:"tool"`
	State      string  `json:"state"`
	ErrorKind  string  `json:"error_kind,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}
