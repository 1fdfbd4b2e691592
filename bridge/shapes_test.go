package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/shapes"
	"github.com/codebridge/codebridge/internal/upstream"
)

// TestShapeRecordedAsTheSandboxGetsIt: a hostile upstream (the stub,
// echoing JSON the test chose) answers with keys that are an email and a
// terminal escape. The shape is recorded from the result after the gate's
// redaction: list_tools gives it with the tool, the email masked to its
// kind, the escape quoted, no value in it.
func TestShapeRecordedAsTheSandboxGetsIt(t *testing.T) {
	stubPy, err := filepath.Abs("../testdata/servers/stub_server.py")
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool([]discovery.Server{{Name: "stub", Command: "python3", Args: []string{stubPy}}}, upstream.Options{})
	defer pool.Close()
	redactor, err := gate.NewRedactor([]string{"email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newSandboxHost(pool, slog.Default())
	h.gate = gate.New(gate.Config{Redactor: redactor}).NewSession()
	h.shapes = shapes.Open("", nil).Book("")
	c := &call{sandboxHost: h}
	ctx := context.Background()

	message := `{"alice@example.org": {"id": 7}, "\u001b[2J": "wiped", "plain": [1.5]}`
	params, _ := json.Marshal(map[string]any{"server": "stub", "tool": "echo", "arguments": map[string]any{"message": message}})
	res, err := methods[protocol.MCallTool](ctx, c, protocol.RPC{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res), "alice@") {
		t.Fatalf("the gate did not redact the result: %s", res)
	}
	raw, err := methods[protocol.MListTools](ctx, c, protocol.RPC{Params: json.RawMessage(`{"server": "stub"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name     string
		Observed *protocol.Observed
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	var echo *protocol.Observed
	for _, tl := range tools {
		switch {
		case tl.Name == "echo":
			echo = tl.Observed
		case tl.Observed != nil:
			t.Errorf("%s has a shape without a call: %+v", tl.Name, tl.Observed)
		}
	}
	want := `str(JSON {"\x1b[2J": str, <email>: {id: int}, plain: [float]})`
	if echo == nil || echo.Calls != 1 || echo.Shape != want || echo.Line != want {
		t.Fatalf("echo's observed shape: %+v, want %s", echo, want)
	}
	for _, value := range []string{"alice", "example.org", "wiped", "7", "1.5"} {
		if strings.Contains(echo.Shape, value) {
			t.Errorf("the value %q is in the shape %s", value, echo.Shape)
		}
	}
}
