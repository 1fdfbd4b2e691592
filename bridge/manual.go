package bridge

import (
	"context"
	"strings"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/skills"
	"github.com/codebridge/codebridge/pyruntime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// manualResource is the MCP resource the run_python description points to:
// the same one-page manual as runtime.capability_summary() in the sandbox.
func manualResource() *mcp.Resource {
	return &mcp.Resource{
		URI:         ManualURI,
		Name:        "codebridge-manual",
		Title:       "codebridge sandbox manual",
		Description: "How to discover and call MCP tools from run_python.",
		MIMEType:    "text/plain",
	}
}

// PythonBridgeManualURI is where the Python code-execution bridge
// documents its manual ("capabilities"); prompts and clients written for
// it read it there, so the same manual is there too.
const PythonBridgeManualURI = "resource://mcp-server-code-execution-mode/capabilities"

// pythonBridgeManualResource is the manual under the Python bridge's URI
// and name.
func pythonBridgeManualResource() *mcp.Resource {
	return &mcp.Resource{
		URI:         PythonBridgeManualURI,
		Name:        "code-execution-capabilities",
		Title:       "Code Execution Sandbox Helpers",
		Description: "The codebridge sandbox manual, where the Python code-execution bridge keeps its own (also at " + ManualURI + ").",
		MIMEType:    "text/plain",
	}
}

// readManual answers a read of either manual resource, under the URI read.
func (b *Bridge) readManual(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "text/plain", Text: b.manual(b.skillsOf(principalOf(req.Extra))),
	}}}, nil
}

// Manual returns the filled-in sandbox manual, with the local user's
// skills.
func (b *Bridge) Manual() string { return b.manual(b.skillsOf(principal.Local())) }

// manual fills in the manual with the skills of a set.
func (b *Bridge) manual(set *skills.Set) string {
	var names []string
	for _, s := range b.pool.Servers() {
		names = append(names, s.Name())
	}
	servers := "none configured"
	if len(names) > 0 {
		servers = strings.Join(names, ", ")
	}
	python := b.single.sbx.Python()
	if python == "" {
		python = "3"
	}
	return strings.NewReplacer("{python}", python, "{servers}", servers, "{skills}", skillNames(set), "{{", "{", "}}", "}").Replace(pyruntime.Manual())
}
