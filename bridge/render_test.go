package bridge

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func TestRender(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	cases := []struct {
		name    string
		res     sandbox.Result
		want    []string
		not     []string
		isError bool
		images  int
	}{
		{"ok with value", sandbox.Result{Status: sandbox.StatusOK, StateKept: true,
			Stdout: sandbox.Output{Text: "hello\n"}, Value: "42", HasValue: true}, []string{"hello\n42"}, []string{"[status"}, false, 0},
		{"stderr after stdout", sandbox.Result{Status: sandbox.StatusOK, StateKept: true,
			Stdout: sandbox.Output{Text: "out"}, Stderr: sandbox.Output{Text: "warn\n"}}, []string{"out\n[stderr]\nwarn"}, nil, false, 0},
		{"nothing", sandbox.Result{Status: sandbox.StatusOK, StateKept: true}, []string{"(no output)"}, nil, false, 0},
		{"error", sandbox.Result{Status: sandbox.StatusError, StateKept: true,
			Traceback: "Traceback...\nValueError: x"}, []string{"ValueError: x", "[status: error]"}, nil, true, 0},
		{"timeout kept", sandbox.Result{Status: sandbox.StatusTimeout, StateKept: true},
			[]string{"[status: timeout after 2s; the code was interrupted; variables and imports were kept]"}, nil, true, 0},
		{"timeout restarted", sandbox.Result{Status: sandbox.StatusTimeout, Notice: "the sandbox was restarted"},
			[]string{"[status: timeout after 2s; the sandbox was restarted]"}, nil, true, 0},
		{"crashed", sandbox.Result{Status: sandbox.StatusCrashed, Notice: "it ran out of memory"},
			[]string{"[status: crashed: it ran out of memory]"}, nil, true, 0},
		{"image", sandbox.Result{Status: sandbox.StatusOK, StateKept: true,
			Images: []sandbox.Image{{MIME: "image/png", Data: png}, {MIME: "image/png", Data: "!!not base64"}}}, []string{"(no output)"}, nil, false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(&c.res, 2*time.Second, "")
			text := r.Content[0].(*mcp.TextContent).Text
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in %q", w, text)
				}
			}
			for _, n := range c.not {
				if strings.Contains(text, n) {
					t.Errorf("unexpected %q in %q", n, text)
				}
			}
			if r.IsError != c.isError {
				t.Errorf("isError = %v", r.IsError)
			}
			if got := len(r.Content) - 1; got != c.images {
				t.Errorf("%d images, want %d", got, c.images)
			}
		})
	}
}

func TestToolDefinitionIsSmall(t *testing.T) {
	tl := tool()
	size := len(tl.Name) + len(tl.Description) + len(inputSchema)
	if size > 1000 {
		t.Fatalf("run_python definition is %d bytes; keep it under 1,000", size)
	}
}

// TestToolDefinitionTokens holds the run_python definition (name,
// description, input schema), as a client reads it from tools/list, to
// the design's 150 tokens of o200k_base, whatever is configured.
func TestToolDefinitionTokens(t *testing.T) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false) // the client decodes \u003c to <
	if err := e.Encode(tool()); err != nil {
		t.Fatal(err)
	}
	def := strings.TrimSpace(buf.String())
	n := len(enc.EncodeOrdinary(def))
	if n > 150 {
		t.Fatalf("run_python's definition is %d tokens, over 150: %s", n, def)
	}
	t.Logf("run_python's definition: %d tokens, %d bytes", n, len(def))
}
