package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spillPath finds the file a cut output names.
var spillPath = regexp.MustCompile(`characters omitted; the full output is in (\S+) \.\.\.\]`)

// TestOutputBudgetSpillsToFile: a stream over the budget keeps its head and
// tail around a marker that counts the characters left out and names a file
// in the workspace holding the whole output.
func TestOutputBudgetSpillsToFile(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_OUTPUT_LIMIT=1000")

	mustContain(t, b.ok("print('✓ small')"), "✓ small")
	mustContain(t, b.ok("import os\nprint(os.path.exists('/workspace/.codebridge'))"), "False")

	lines := "'\\n'.join(f'línea {i}' for i in range(5000))"
	got := b.ok("print(" + lines + ")")
	total := 0 // characters printed, newline included
	for i := range 5000 {
		total += len([]rune(fmt.Sprintf("línea %d\n", i)))
	}
	mustContain(t, got, "línea 0\n", "línea 4999\n", fmt.Sprintf("[... %s characters omitted;", commas(total-1000)))
	m := spillPath.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("the marker names no file:\n%s", got)
	}
	if !strings.HasPrefix(m[1], "/workspace/.codebridge/output/cell-") || !strings.HasSuffix(m[1], "-stdout.txt") {
		t.Fatalf("unexpected spill file %q", m[1])
	}
	mustContain(t, b.ok(fmt.Sprintf("print(open(%q, encoding='utf-8').read() == %s + '\\n')", m[1], lines)), "True")

	// Files of earlier cells stay; a file that cannot be written is reported.
	b.ok("os.chmod('/workspace/.codebridge/output', 0o500)")
	got = b.ok("import sys\nprint('e' * 5000, file=sys.stderr)")
	mustContain(t, got, "[stderr]\n", "[... 4,001 characters omitted; saving the full output failed: could not create a file for it in /workspace/.codebridge/output: Permission denied")
	size := total + 5000 // bytes: "í" takes two
	mustContain(t, b.ok(fmt.Sprintf("os.chmod('/workspace/.codebridge/output', 0o755)\nprint(os.path.getsize(%q))", m[1])),
		fmt.Sprint(size))
}

// commas writes n with thousands separators, as the markers do.
func commas(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TestTOONOutput: with CODEBRIDGE_OUTPUT=toon a final value that is JSON
// data, or a tool's structured result, is shown as TOON; other values keep
// their repr.
func TestTOONOutput(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"stub": stub()}}), "CODEBRIDGE_OUTPUT=toon")
	records := `[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]`
	if got := b.ok(records); got != "[2]{id,name}:\n  1,a\n  2,b" {
		t.Fatalf("records as TOON: got %q", got)
	}
	mustContain(t, b.ok("print('printed')\n{'user': {'name': 'Ada', 'tags': ['x', 'y']}}"),
		"printed\nuser:\n  name: Ada\n  tags[2]: x,y")
	if got := b.ok("await mcp_stub.stats(values=[1, 2, 3])"); got != "count: 3\nsum: 6" {
		t.Fatalf("structured content as TOON: got %q", got)
	}
	if got := b.ok("(1, 'tuple')"); got != "(1, 'tuple')" {
		t.Fatalf("a value that is not JSON data: got %q", got)
	}

	text := startBridge(t, home(t, nil))
	if got := text.ok(records); got != "[{'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'}]" {
		t.Fatalf("text mode: got %q", got)
	}
}

// TestProgressNotifications: a call with a progress token that runs for a
// while hears how long it has run and the latest line it printed.
func TestProgressNotifications(t *testing.T) {
	needEnv(t)
	notes := make(chan *mcp.ProgressNotificationParams, 100)
	cs := connectWith(t, home(t, nil), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case notes <- req.Params:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
		"code": "print('working')\nimport time\ntime.sleep(4)\nprint('finished')"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("run_python: %v %+v", err, res)
	}
	// Notifications are handled apart from the result: wait for them.
	var last float64
	for {
		select {
		case n := <-notes:
			if n.ProgressToken != "tok" || n.Progress <= last {
				t.Fatalf("notification %+v after progress %v", n, last)
			}
			last = n.Progress
			if !regexp.MustCompile(`^\d+s: `).MatchString(n.Message) {
				t.Fatalf("message %q", n.Message)
			}
			if strings.Contains(n.Message, "working") {
				return
			}
		case <-ctx.Done():
			t.Fatal("no progress notification said \"working\"")
		}
	}
}

// connectWith starts codebridge and connects a client with opts.
func connectWith(t *testing.T, homeDir string, opts *mcp.ClientOptions, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(testEnv(homeDir), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to codebridge: %v\nstderr:\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("codebridge stderr:\n%s", stderr)
		}
	})
	return cs
}

// TestToolListChanged: a tool an upstream adds (and announces with
// notifications/tools/list_changed) is there in the next cell, without a
// restart, although the sandbox had cached the server's tool list.
func TestToolListChanged(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"stub": stub()}}))
	mustContain(t, b.ok("print(len(dir(mcp_stub)), 'fresh' in dir(mcp_stub))"), "10 False")
	mustContain(t, b.ok("print(await mcp_stub.grow(name='fresh'))"), "added fresh")
	mustContain(t, b.ok("print(await mcp_stub.fresh())\nfrom mcp.servers.stub import fresh\nprint(fresh.sync())"),
		"fresh is here\nfresh is here")
	mustContain(t, b.ok("print([d['tool'] for d in runtime.query_tool_docs_sync('stub')])"), "'fresh'")
	mustContain(t, b.ok("print((await runtime.search_tool_docs('fresh'))[0]['python'])"), "mcp_stub.fresh")
}
