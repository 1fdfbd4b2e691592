package bridge

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the name of the one tool codebridge shows.
const ToolName = "run_python"

// toolDescription is what the model reads about run_python. It does not
// depend on the configured servers: the model discovers those from Python.
const toolDescription = "Run Python 3 in a persistent sandbox (no network; variables, imports and files persist between calls). " +
	"Configured MCP servers are Python objects: `await mcp_<server>.<tool>(**args)` or `await call_tool(server, tool, args)`; " +
	"top-level await and asyncio.gather work. Discover with `runtime.list_servers_sync()`, " +
	"`await runtime.search_tool_docs(\"query\")`, `help(mcp_<server>.<tool>)`. " +
	"Only printed output comes back, so filter in Python. Manual: `print(runtime.capability_summary())`."

// inputSchema is the JSON Schema of run_python's arguments, written out so
// that its size is fixed and small.
const inputSchema = `{"type":"object","properties":{` +
	`"code":{"type":"string","description":"Python source; the value of a final expression is shown"},` +
	`"timeout":{"type":"integer","description":"seconds (default 30)"},` +
	`"servers":{"type":"array","items":{"type":"string"},"description":"servers to start first"}},` +
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
}
