package bridge

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the name of the one tool codebridge shows.
const ToolName = "run_python"

// ManualURI is the MCP resource that holds the sandbox's manual.
const ManualURI = "codebridge://manual"

// toolDescription is what the model reads about run_python. It does not
// depend on the configured servers: the model discovers those from Python.
const toolDescription = "Run Python in a persistent sandbox (no network; variables and files persist). " +
	"Each MCP server is a Python object: `await mcp_<server>.<tool>(**args)`. " +
	"Find tools: `await runtime.search_tool_docs(\"query\")`. Manual resource: " + ManualURI + ". Only printed output returns."

// inputSchema is the JSON Schema of run_python's arguments, written out so
// that its size is fixed and small. `session` needs no description: the
// answer that starts a session says how to pass its handle. Its
// x-mcp-header (SEP-2243) has clients on the stateless protocol mirror it
// into the Mcp-Param-Session header, for a load balancer to route on.
const inputSchema = `{"type":"object","properties":{` +
	`"code":{"type":"string"},` +
	`"timeout":{"type":"number","description":"seconds"},` +
	`"servers":{"type":"array","items":{"type":"string"},"description":"start first"},` +
	`"session":{"type":"string","x-mcp-header":"Session"}},` +
	`"required":["code"]}`

// tool returns the run_python definition.
func tool() *mcp.Tool {
	return &mcp.Tool{
		Name:        ToolName,
		Description: toolDescription,
		InputSchema: json.RawMessage(inputSchema),
	}
}

// args are run_python's arguments.
type args struct {
	Code    string   `json:"code"`
	Timeout *float64 `json:"timeout"`
	Servers []string `json:"servers"`
	// Session is the handle of the session to run in (handles.go); ""
	// runs in the caller's current session, or a new one.
	Session string `json:"session"`
}
