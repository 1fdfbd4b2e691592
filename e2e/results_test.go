package e2e

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func oddServer() server {
	return server{Command: "python3", Args: []string{filepath.Join(repoRoot, "testdata/servers/odd_server.py")}}
}

func TestResultValues(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {
		"stub":       stub(),
		"everything": npmServer("mcp-server-everything"),
	}}))
	cases := []struct {
		name, code string
		wants      []string
	}{
		{"structuredContent is a dict", `r = await mcp_stub.stats(values=[1, 2, 3])
print(type(r).__name__, r["sum"], r["count"])`, []string{"dict 6 3"}},
		{"a single text block is a str", `r = await mcp_stub.echo(message="plain")
print(type(r).__name__, r)`, []string{"str plain"}},
		{"several blocks are a list with an Image", `r = await mcp_everything.get_tiny_image()
imgs = [x for x in r if hasattr(x, "mime_type")]
print(type(r).__name__, imgs[0].mime_type, imgs[0].data[:4])`, []string{"list image/png b'\\x89PNG'"}},
		{"raw=True keeps the MCP result", `r = await mcp_stub.echo(message="x", raw=True)
print(sorted(r), r["content"][0]["text"])`, []string{"'content'", " x"}},
		{"isError raises ToolError", `try:
    await mcp_stub.fail(message="quota exceeded")
except ToolError as e:
    print("server", e.server, "tool", e.tool, "|", e)`, []string{"server stub tool fail", "quota exceeded"}},
		{"final expression shown", `{"a": 1}`, []string{"{'a': 1}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mustContain(t, b.ok(c.code), c.wants...)
		})
	}
	t.Run("None is not shown", func(t *testing.T) {
		if got := b.ok("None"); got != "(no output)" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestImages(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"everything": npmServer("mcp-server-everything")}}))
	// A 1x1 PNG, written by the code itself.
	const makePNG = `import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))
open("/workspace/dot.png", "wb").write(png)
`
	cases := []struct{ name, code string }{
		{"from an upstream", `r = await mcp_everything.get_tiny_image()
display([x for x in r if hasattr(x, "mime_type")][0])`},
		{"PNG bytes", makePNG + `display(png)`},
		{"a file path", makePNG + `display("/workspace/dot.png")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(c.code)
			if r.isError {
				t.Fatalf("failed: %s", r.text)
			}
			if len(r.images) != 1 || r.images[0].MIMEType != "image/png" || !bytes.HasPrefix(r.images[0].Data, []byte("\x89PNG")) {
				t.Fatalf("want one PNG image, got %d: %s", len(r.images), r.text)
			}
		})
	}
	t.Run("not an image", func(t *testing.T) {
		r := b.run(`display(b"plain bytes")`)
		if !r.isError || len(r.images) != 0 {
			t.Fatalf("want an error and no image: %v %s", r.isError, r.text)
		}
	})
}

// 64 MiB in either direction gets through.
func TestBigData(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": stub()}}))
	t.Run("64 MiB tool result", func(t *testing.T) {
		got := b.ok(`r = await mcp_stub.big(size=64 << 20)
print(len(r), r[:3], r[-3:])`, "timeout", 120)
		mustContain(t, got, "67108864 xxx xxx")
	})
	t.Run("64 MiB print", func(t *testing.T) {
		got := b.ok(`print("y" * (64 << 20))`, "timeout", 120)
		mustContain(t, got, "yyyy", "omitted")
		if len(got) > 100000 {
			t.Fatalf("the answer is %d bytes: the output budget was not applied", len(got))
		}
	})
	t.Run("the sandbox still works", func(t *testing.T) {
		mustContain(t, b.ok(`print("fine")`), "fine")
	})
}

// Odd content never crashes a call.
func TestOddContent(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"odd": oddServer()}}))
	cases := []struct {
		name, code string
		wants      []string
	}{
		{"unicode", `print("héllo ✓ 你好 🎉")`, []string{"héllo ✓ 你好 🎉"}},
		{"NUL in output", `print("a\x00b")`, []string{"a\x00b"}},
		{"invalid UTF-8 from a subprocess", `import subprocess
subprocess.run(["printf", "\\377\\376 still here\\n"])`, []string{"still here"}},
		{"binary blob on fd 1", `import os
os.write(1, bytes(range(256)) * 64)
print("\nafter")`, []string{"after"}},
		{"lone surrogate in a print", `print("x\ud800y")`, []string{"x", "y"}},
		// A stdio upstream's result passes through undecoded: a content
		// type the go-sdk does not know arrives as a plain dict beside
		// the text, and the server stays usable (the next cases call it).
		{"unknown content type", `r = await mcp_odd.unknown_type()
print(r)`, []string{"'type': 'hologram'", "after"}},
		{"NUL from an upstream", `r = await mcp_odd.nul_text()
print(repr(r))`, []string{`'a\x00b'`}},
		{"surrogate from an upstream", `r = await mcp_odd.surrogate_text()
print(type(r).__name__)`, []string{"str"}},
		{"binary resource", `r = await mcp_odd.blob()
print(type(r).__name__, r)`, []string{"blob.bin"}},
		{"links and embedded", `r = await mcp_odd.links()
print(r)`, []string{"a.txt", "embedded"}},
		{"empty content", `r = await mcp_odd.empty()
print(repr(r))`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(c.code)
			if strings.Contains(r.text, "[status: crashed") {
				t.Fatalf("the sandbox crashed: %s", r.text)
			}
			mustContain(t, r.text, c.wants...)
		})
	}
	mustContain(t, b.ok(`print("alive")`), "alive")
}
