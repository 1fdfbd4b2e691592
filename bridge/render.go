package bridge

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// render turns a cell's result into what the model reads: stdout, then
// stderr, then the final value or the traceback, then a status line when
// the cell did not simply succeed, then calls: the list of the calls the
// cell made, when it says them (ledgerNote). The text stands on its own;
// images follow it as image content.
func render(r *sandbox.Result, timeout time.Duration, calls string) *mcp.CallToolResult {
	var b strings.Builder
	section := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	section(r.Stdout.Text)
	if r.Stderr.Text != "" {
		section("[stderr]\n" + r.Stderr.Text)
	}
	if r.HasValue {
		section(r.Value)
	}
	section(r.Traceback)

	failed := r.Status != sandbox.StatusOK
	switch r.Status {
	case sandbox.StatusOK:
		if r.Notice != "" {
			section("[note: " + r.Notice + "]")
		}
	case sandbox.StatusError:
		section("[status: error]")
	case sandbox.StatusTimeout:
		section(fmt.Sprintf("[status: timeout after %s; %s]", timeout, stateLine(r)))
	case sandbox.StatusCancelled:
		section("[status: cancelled; " + stateLine(r) + "]")
	case sandbox.StatusCrashed:
		section("[status: crashed: " + r.Notice + "]")
	}
	section(calls)
	if b.Len() == 0 {
		b.WriteString("(no output)")
	}

	res := &mcp.CallToolResult{IsError: failed, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
	for _, img := range r.Images {
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil {
			continue
		}
		res.Content = append(res.Content, &mcp.ImageContent{MIMEType: img.MIME, Data: data})
	}
	return res
}

func stateLine(r *sandbox.Result) string {
	if r.StateKept {
		return "the code was interrupted; variables and imports were kept"
	}
	return r.Notice
}

// errorResult is a failed run_python call whose code never ran.
func errorResult(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: "[status: error] " + fmt.Sprintf(format, a...)}},
	}
}
