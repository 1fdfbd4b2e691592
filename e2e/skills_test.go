package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A skill saved in one bridge is imported, called (it calls an upstream
// tool) and found by search in a new bridge with a new container.
func TestSkillAcrossBridges(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	first := startBridge(t, h)
	saved := first.ok(`
import functools
OFFSET = 100

def logged(f):
    @functools.wraps(f)
    async def wrapper(*args, **kwargs):
        return ("logged", await f(*args, **kwargs))
    return wrapper

@logged
async def add_offset(a, b=2):
    "Adds two numbers with the stub server, plus a fixed offset."
    return int(await mcp_stub.add(a=a, b=b)) + OFFSET

print(runtime.save_skill("add_offset", add_offset)["name"])
print(runtime.save_tool("triple", "def triple(x):\n    return 3 * x\n", "Triples a number.")["name"])
`)
	mustContain(t, saved, "add_offset", "triple")
	firstContainers := containersOf(t, first.pid)
	first.close()

	second := startBridge(t, h)
	got := second.ok(`
from skills import add_offset
print(await add_offset(1))
print(skills.triple(5))
hits = await runtime.search_tool_docs("offset numbers", limit=3)
print([(x.get("skill"), x["python"]) for x in hits][0])
print(sorted(s["name"] for s in runtime.list_skills()))
`)
	mustContain(t, got, "('logged', 103)", "15", "(True, 'skills.add_offset')", "['add_offset', 'triple']")
	if c := containersOf(t, second.pid); len(c) != 1 || len(firstContainers) != 1 || c[0].ID == firstContainers[0].ID {
		t.Fatalf("the second bridge should run a new container: %v then %v", firstContainers, c)
	}
	manual := readResource(t, second, "codebridge://manual")
	mustContain(t, manual.Text, "add_offset, triple")
}

// Source that does not compile, a bad name and an oversized skill are
// refused with clear errors; a stored skill that fails to import is
// reported in the cell that imports it, and the sandbox goes on.
func TestSkillErrors(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	b := startBridge(t, h)
	cases := []struct{ code, want string }{
		{`runtime.save_skill("broken", "def broken(:\n    pass\n")`, "does not compile"},
		{`runtime.save_skill("../evil", "x = 1")`, "is not a skill name"},
		{`runtime.save_skill("class", "x = 1")`, "keyword"},
		{`runtime.save_skill("big", "def big():\n    pass\n" + "#" * 70000 + "\n")`, "a skill may have at most 65536"},
		{`runtime.save_skill("other", "def named():\n    pass\n")`, "does not define 'other'"},
		{"import threading\nlock = threading.Lock()\ndef locked():\n    return lock\nruntime.save_skill('locked', locked)", "cannot be written as source"},
	}
	for _, c := range cases {
		r := b.run(c.code)
		if !r.isError || !strings.Contains(r.text, c.want) {
			t.Errorf("%s:\nwant an error with %q, got:\n%s", c.code, c.want, r.text)
		}
	}
	dir := filepath.Join(h, ".local", "state", "codebridge", "skills")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("refused skills were stored: %v", entries)
	}
	must(t, os.MkdirAll(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "fails.py"), []byte("def fails():\n    pass\nraise RuntimeError('boom at import')\n"), 0o600))
	b2 := startBridge(t, h)
	r := b2.run("from skills import fails")
	if !r.isError || !strings.Contains(r.text, "skill 'fails' failed to import: RuntimeError: boom at import") {
		t.Fatalf("a broken skill should fail its import clearly:\n%s", r.text)
	}
	mustContain(t, b2.ok("print('still here')"), "still here")
}

// readResource reads one resource through the bridge's MCP client.
func readResource(t *testing.T, b *bridge, uri string) *mcp.ResourceContents {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	return res.Contents[0]
}

// volume returns a workspace volume name for this test, removed at its end.
func volume(t *testing.T) string {
	name := fmt.Sprintf("cbtest-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		engine := os.Getenv("CODEBRIDGE_ENGINE")
		if engine == "" || engine == "auto" {
			engine = "podman"
		}
		_ = exec.Command(engine, "volume", "rm", "-f", name).Run()
	})
	return name
}

// A file written in one bridge is there in the next with a persistent
// workspace (volume or host directory), and gone with the ephemeral one;
// a second bridge at once on the same workspace shares it.
func TestWorkspacePersists(t *testing.T) {
	localEngineOnly(t, "persistent workspaces are engine volumes or host directories; the kubernetes engine has none yet")
	needEnv(t)
	h := home(t, nil)
	write := `open("/workspace/note.txt", "w").write("kept"); print("written")`
	read := `import os; print("exists" if os.path.exists("/workspace/note.txt") else "gone")`
	dir := filepath.Join(t.TempDir(), "ws")
	for name, ws := range map[string]string{"volume": volume(t), "directory": dir, "ephemeral": "ephemeral"} {
		t.Run(name, func(t *testing.T) {
			env := "CODEBRIDGE_WORKSPACE=" + ws
			a := startBridge(t, h, env)
			mustContain(t, a.ok(write), "written")
			if ws != "ephemeral" { // a second bridge at once shares it
				beside := startBridge(t, h, env)
				mustContain(t, beside.ok(read), "exists")
				beside.close()
			}
			a.close()
			want := map[bool]string{true: "gone", false: "exists"}[ws == "ephemeral"]
			mustContain(t, startBridge(t, h, env).ok(read), want)
		})
	}
	if data, err := os.ReadFile(filepath.Join(dir, "note.txt")); err != nil || string(data) != "kept" {
		t.Fatalf("the host directory workspace should hold the file, readable by the user: %q, %v", data, err)
	}
}

// inspector runs the MCP Inspector CLI against codebridge and returns its
// JSON output.
func inspector(t *testing.T, h string, env []string, args ...string) map[string]any {
	t.Helper()
	bin := filepath.Join(repoRoot, "testdata/npm/node_modules/.bin/mcp-inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", binary}, args...)...)
	cmd.Env = append(testEnv(h), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\n%s", args, err, out)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector %v: not JSON: %v\n%s", args, err, out)
	}
	return v
}

// A CSV and a PNG the code shares are read through resources/read by the
// MCP Inspector CLI, byte for byte; '..' and symlink escapes are refused.
func TestSharedFilesThroughInspector(t *testing.T) {
	localEngineOnly(t, "shares a workspace volume between bridges; the kubernetes engine has none yet")
	needEnv(t)
	h := home(t, nil)
	env := []string{"CODEBRIDGE_WORKSPACE=" + volume(t)}
	csv := "city,temp\nOslo,-3\nLisboa,17\n"
	png := tinyPNG()
	code := fmt.Sprintf(`import base64, os
os.makedirs("/workspace/out", exist_ok=True)
open("/workspace/out/temps.csv", "w").write(%q)
open("/workspace/out/chart.png", "wb").write(base64.b64decode(%q))
runtime.share("out/temps.csv")
display("/workspace/out/chart.png")
os.symlink("/etc/passwd", "/workspace/out/passwd")
os.symlink("/etc", "/workspace/etc")
print("shared")`, csv, base64.StdEncoding.EncodeToString(png))
	res := inspector(t, h, env, "--method", "tools/call", "--tool-name", "run_python", "--tool-arg", "code="+code)
	text, _ := json.Marshal(res)
	mustContain(t, string(text), `"type":"resource_link"`, `"uri":"codebridge://workspace/out/temps.csv"`, `"mimeType":"text/csv"`)

	read := func(uri string) map[string]any {
		out := inspector(t, h, env, "--method", "resources/read", "--uri", uri)
		return out["contents"].([]any)[0].(map[string]any)
	}
	if got := read("codebridge://workspace/out/temps.csv"); got["text"] != csv {
		t.Fatalf("the CSV differs: %v", got)
	}
	got := read("codebridge://workspace/out/chart.png")
	blob, err := base64.StdEncoding.DecodeString(fmt.Sprint(got["blob"]))
	if err != nil || string(blob) != string(png) || got["mimeType"] != "image/png" {
		t.Fatalf("the PNG differs (%v): %v", err, got)
	}

	b := startBridge(t, h, env...)
	for uri, want := range map[string]string{
		"codebridge://workspace/../etc/passwd":     "'..' is not allowed",
		"codebridge://workspace/%2e%2e/etc/passwd": "'..' is not allowed",
		"codebridge://workspace/out/passwd":        "is a symlink",
		"codebridge://workspace/etc/passwd":        "is outside /workspace",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err = b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reading %s: want an error with %q, got %v", uri, want, err)
		}
	}
	r := b.run(`runtime.share("/etc/passwd")`)
	if !r.isError || !strings.Contains(r.text, "is outside /workspace") {
		t.Fatalf("sharing a file outside the workspace should fail:\n%s", r.text)
	}
	b.ok(`open("big.bin", "wb").write(b"x" * (33 << 20))`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err = b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "codebridge://workspace/big.bin"}); err == nil || !strings.Contains(err.Error(), "at most 32 MiB can be read") {
		t.Fatalf("a file over the cap should be refused clearly: %v", err)
	}
	list, err := b.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(list.ResourceTemplates) == 0 || list.ResourceTemplates[0].URITemplate != "codebridge://workspace/{+path}" {
		t.Fatalf("the workspace template is not listed: %v %v", list, err)
	}
}

// tinyPNG is a valid 1x1 PNG.
func tinyPNG() []byte {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	return b
}

// The files a shared are listed by resources/list, and exec --out copies
// them to the host.
func TestExecOutAndResourceList(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	out := t.TempDir()
	stdout, stderr, code := cli(t, h, "open('r.txt','w').write('report'); runtime.share('r.txt')\n", nil, "exec", "--out", out, "-")
	if code != 0 {
		t.Fatalf("exec --out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(out, "r.txt")); err != nil || string(data) != "report" {
		t.Fatalf("exec --out did not copy the shared file: %q %v\n%s", data, err, stderr)
	}
	b := startBridge(t, h)
	b.ok("open('a.json','w').write('{}'); runtime.share('a.json')")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := b.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	mustContain(t, strings.Join(uris, " "), "codebridge://workspace/a.json")
}

// A read-only mount is readable and not writable; a refused mount says why.
func TestMounts(t *testing.T) {
	localEngineOnly(t, "host directories; the kubernetes engine refuses --mount (unit test TestKubeStartRefusesHostState)")
	needEnv(t)
	h := home(t, nil)
	proj := filepath.Join(t.TempDir(), "proj")
	must(t, os.MkdirAll(proj, 0o755))
	must(t, os.WriteFile(filepath.Join(proj, "README"), []byte("project notes"), 0o644))
	code := "print(open('/mnt/proj/README').read())\ntry:\n    open('/mnt/proj/new', 'w')\nexcept OSError as e:\n    print('not writable:', e.strerror)\n"
	stdout, stderr, exit := cli(t, h, code, nil, "exec", "--mount", proj, "-")
	if exit != 0 {
		t.Fatalf("exit %d\n%s\n%s", exit, stdout, stderr)
	}
	mustContain(t, stdout, "project notes", "not writable: Read-only file system")
	for _, c := range []struct{ mount, want string }{
		{"/", "/ is the whole host"},
		{h, "codebridge's server configuration (~/MCPs)"},       // HOME holds both:
		{h, "codebridge's state directory (skills, audit log)"}, // both are named
		{"/run", "engine's socket"},
		{proj + ":/proc/x", "is the sandbox's own"},
	} {
		_, stderr, exit := cli(t, h, "print(1)\n", nil, "exec", "--mount", c.mount, "-")
		if exit != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("--mount %s: exit %d, want 2 and %q:\n%s", c.mount, exit, c.want, stderr)
		}
	}
}
