package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestStdioFramingAsTheSDK drives `codebridge serve` with raw JSON-RPC
// lines, the way a client that is not the go-sdk might write them: a
// plain request (which the bridge reads from its envelope,
// bridge/stdio.go), one with an escaped method name (decoded as the
// go-sdk decodes it), one pretty-printed over several lines and a batch
// (from there on the go-sdk's own transport reads), then a plain request
// again. Each is answered as the go-sdk answers it: the batch with one
// array, every run_python call with its output; at stdin's end the
// bridge exits cleanly and leaves no container.
func TestStdioFramingAsTheSDK(t *testing.T) {
	needEnv(t)
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(testEnv(home(t, nil)), "CODEBRIDGE_LOG_LEVEL=debug")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("codebridge stderr:\n%s", stderr)
		}
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(text string) {
		t.Helper()
		if _, err := io.WriteString(stdin, text); err != nil {
			t.Fatal(err)
		}
	}
	// next is the next line of the bridge's that is not a notification.
	next := func() string {
		t.Helper()
		for lines.Scan() {
			if line := lines.Text(); !strings.Contains(line, `"method":"notifications/`) {
				return line
			}
		}
		t.Fatalf("the bridge's output ended: %v", lines.Err())
		return ""
	}
	call := func(id int, code string) string {
		args, _ := json.Marshal(map[string]any{"name": "run_python", "arguments": map[string]string{"code": code}})
		return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":` + string(args) + `}`
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	mustContain(t, next(), `"id":1,"result":{`, `"protocolVersion":"2025-03-26"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")

	send(call(2, "print(6*7)") + "\n")
	mustContain(t, next(), `"id":2,"result":{`, `42`)

	send(strings.Replace(call(3, "print('escaped')"), `"tools/call"`, `"tools\/call"`, 1) + "\r\n")
	mustContain(t, next(), `"id":3,"result":{`, `escaped`)

	send("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 4,\n  \"method\": \"ping\"\n}\n")
	if got := next(); got != `{"jsonrpc":"2.0","id":4,"result":{}}` {
		t.Fatalf("ping over several lines answered %s", got)
	}

	send(`[{"jsonrpc":"2.0","id":5,"method":"ping"},` + call(6, "print('in a batch')") + "]\n")
	batch := next()
	var answers []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(batch), &answers); err != nil || len(answers) != 2 {
		t.Fatalf("a batch of two requests answered %s, want an array of two responses (%v)", batch, err)
	}
	mustContain(t, batch, `"id":5,"result":{}`, `"id":6,"result":{`, `in a batch`)

	send(call(7, "print('after')") + "\n")
	mustContain(t, next(), `"id":7,"result":{`, `after`)

	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the bridge did not exit cleanly at stdin's end: %v", err)
	}
	if left := containersOf(t, cmd.Process.Pid); len(left) > 0 {
		t.Fatalf("containers left behind: %+v", left)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
