package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskFiles is how many files the scripted task reads.
const taskFiles = 200

// taskCode is what an agent would send through run_python to do the task
// in one call: %q is the directory.
const taskCode = `import asyncio
d = %q
listing = (await mcp_filesystem.list_directory(path=d))["content"]
names = [l[7:] for l in listing.splitlines() if l.startswith("[FILE] ")]
texts = await asyncio.gather(*[mcp_filesystem.read_text_file(path=f"{d}/{n}") for n in names])
counts = {n: sum("TODO" in l for l in t["content"].splitlines()) for n, t in zip(names, texts)}
await mcp_memory.create_entities(entities=[
    {"name": n, "entityType": "file", "observations": [f"TODO lines: {c}"]} for n, c in counts.items()])
print(len(counts), "files,", sum(counts.values()), "TODO lines stored")`

// discoveryCode is the call an agent makes first to learn the signatures
// of the tools it will use (codebridge never puts them in the context).
const discoveryCode = `for f in (mcp_filesystem.list_directory, mcp_filesystem.read_text_file, mcp_memory.create_entities):
    help(f)`

// writeTaskFiles writes taskFiles source-like files into dir, each with a
// few TODO lines, and returns how many TODO lines each has.
func writeTaskFiles(dir string) (map[string]int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(7))
	words := []string{"parse", "config", "request", "buffer", "retry", "cache", "user", "token", "index", "render", "queue", "limit"}
	want := map[string]int{}
	for i := range taskFiles {
		name := fmt.Sprintf("module_%03d.py", i)
		var sb strings.Builder
		fmt.Fprintf(&sb, "\"\"\"Module %d: helpers for %s handling.\"\"\"\n\nimport os\nimport json\n\n", i, words[i%len(words)])
		todos := 0
		for f := range 4 + rng.Intn(5) {
			w := words[rng.Intn(len(words))]
			fmt.Fprintf(&sb, "\ndef %s_%d(value, options=None):\n", w, f)
			for range 3 + rng.Intn(5) {
				if rng.Intn(6) == 0 {
					fmt.Fprintf(&sb, "    # TODO: handle the %s case when options is empty\n", words[rng.Intn(len(words))])
					todos++
				}
				fmt.Fprintf(&sb, "    value = %s(value, options)  # step %d\n", words[rng.Intn(len(words))], rng.Intn(100))
			}
			sb.WriteString("    return value\n")
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
			return nil, err
		}
		want[name] = todos
	}
	return want, nil
}

// taskTokens is what passes through the model in one style.
type taskTokens struct {
	definitions, calls, results int
	toolCalls                   int
}

func (t taskTokens) total() int { return t.definitions + t.calls + t.results }

// countCall adds one tool call (name and arguments, as the model writes
// it) and its result (the content blocks, as the model reads them).
func (e *env) countCall(t *taskTokens, name string, args any, res *mcp.CallToolResult) {
	t.toolCalls++
	t.calls += e.tok.countJSON(map[string]any{"name": name, "arguments": args})
	t.results += e.tok.countJSON(res.Content)
}

// measureTask does the scripted task both ways against the real servers
// and counts the tokens each way puts through the model.
func (e *env) measureTask(ctx context.Context) ([]row, error) {
	dir := e.path("task/files")
	want, err := writeTaskFiles(dir)
	if err != nil {
		return nil, err
	}
	wantTotal := 0
	for _, n := range want {
		wantTotal += n
	}

	d, err := e.taskDirect(ctx, dir, want)
	if err != nil {
		return nil, fmt.Errorf("direct style: %w", err)
	}
	c, took, err := e.taskCode(ctx, dir, want, wantTotal)
	if err != nil {
		return nil, fmt.Errorf("code style: %w", err)
	}
	red := 100 * (1 - float64(c.total())/float64(d.total()))
	return []row{
		{
			name: fmt.Sprintf("Task, direct: %d tool calls", d.toolCalls),
			value: fmt.Sprintf("%s tokens (schemas %s + calls %s + results %s)",
				commas(d.total()), commas(d.definitions), commas(d.calls), commas(d.results)),
			spread: "exact count", target: "read 200 files, count TODOs, store in memory", ok: true, info: true,
		},
		{
			name: fmt.Sprintf("Task, code: %d run_python calls", c.toolCalls),
			value: fmt.Sprintf("%s tokens (definition %d + code %d + output %d)",
				commas(c.total()), c.definitions, c.calls, c.results),
			spread: "exact count", target: "same task, same servers", ok: true, info: true,
		},
		{
			name:   "Task token reduction",
			value:  fmt.Sprintf("−%.1f%%", red),
			spread: "exact count", target: "98.7% in Anthropic's example", ok: true, info: true,
		},
		{
			name:   "Task, code style, wall time of the run_python call",
			value:  fmtSeconds(took.median()),
			spread: spread(took, fmtSeconds) + fmt.Sprintf(", %d runs", len(took)), ok: true, info: true,
		},
	}, nil
}

// taskDirect performs the task with go-sdk clients wired straight to the
// servers, the way an agent with both servers configured would: one call
// to list the directory, one per file, one to store the counts.
func (e *env) taskDirect(ctx context.Context, dir string, want map[string]int) (taskTokens, error) {
	var t taskTokens
	memFile := e.path("task/memory-direct.jsonl")
	fs, err := direct(ctx, e.filesystem(dir))
	if err != nil {
		return t, err
	}
	defer fs.Close()
	mem, err := direct(ctx, e.memory(memFile))
	if err != nil {
		return t, err
	}
	defer mem.Close()
	var schemas []*mcp.Tool
	for _, cs := range []*mcp.ClientSession{fs, mem} {
		var tools []*mcp.Tool
		if tools, err = listTools(ctx, cs); err != nil {
			return t, err
		}
		schemas = append(schemas, tools...)
	}
	t.definitions = e.tok.countJSON(schemas)

	call := func(cs *mcp.ClientSession, name string, args map[string]any) (string, error) {
		res, cerr := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if cerr != nil {
			return "", fmt.Errorf("%s: %w", name, cerr)
		}
		if res.IsError {
			return "", fmt.Errorf("%s: %s", name, resultText(res))
		}
		e.countCall(&t, name, args, res)
		return resultText(res), nil
	}
	listing, err := call(fs, "list_directory", map[string]any{"path": dir})
	if err != nil {
		return t, err
	}
	var entities []map[string]any
	for _, l := range strings.Split(listing, "\n") {
		name, ok := strings.CutPrefix(l, "[FILE] ")
		if !ok {
			continue
		}
		text, err := call(fs, "read_text_file", map[string]any{"path": dir + "/" + name})
		if err != nil {
			return t, err
		}
		n := strings.Count(text, "TODO")
		if n != want[name] {
			return t, fmt.Errorf("%s: counted %d TODO lines, want %d", name, n, want[name])
		}
		entities = append(entities, map[string]any{"name": name, "entityType": "file", "observations": []string{fmt.Sprintf("TODO lines: %d", n)}})
	}
	if len(entities) != len(want) {
		return t, fmt.Errorf("listed %d files, want %d", len(entities), len(want))
	}
	if _, err := call(mem, "create_entities", map[string]any{"entities": entities}); err != nil {
		return t, err
	}
	return t, checkMemory(memFile, want)
}

// taskCode performs the task through codebridge: a discovery call, then
// one run_python call that does the work in the sandbox. The call is run
// again to time it; only the first counts for tokens.
func (e *env) taskCode(ctx context.Context, dir string, want map[string]int, wantTotal int) (taskTokens, sample, error) {
	var t taskTokens
	memFile := e.path("task/memory-code.jsonl")
	cfg, err := e.writeConfig("task.json", map[string]server{
		"filesystem": e.filesystem(dir),
		"memory":     e.memory(memFile),
	})
	if err != nil {
		return t, nil, err
	}
	b, err := e.startBridge(ctx, cfg)
	if err != nil {
		return t, nil, err
	}
	defer b.close()
	lt, err := b.cs.ListTools(ctx, nil)
	if err != nil {
		return t, nil, err
	}
	t.definitions = e.tok.countJSON(lt.Tools)

	code := fmt.Sprintf(taskCode, dir)
	var took sample
	for i, c := range []string{discoveryCode, code, code, code} {
		start := time.Now()
		res, err := b.call(ctx, c)
		if err != nil {
			return t, nil, err
		}
		if res.IsError {
			return t, nil, fmt.Errorf("run_python failed:\n%s", resultText(res))
		}
		switch i {
		case 0:
			e.countCall(&t, "run_python", map[string]any{"code": c}, res)
		case 1:
			e.countCall(&t, "run_python", map[string]any{"code": c}, res)
			wantOut := fmt.Sprintf("%d files, %d TODO lines stored", len(want), wantTotal)
			if !strings.Contains(resultText(res), wantOut) {
				return t, nil, fmt.Errorf("the task printed %q, want %q", resultText(res), wantOut)
			}
			took = append(took, time.Since(start).Seconds())
		default:
			took = append(took, time.Since(start).Seconds())
		}
	}
	return t, took, checkMemory(memFile, want)
}

// checkMemory verifies that the memory server's file holds one entity per
// file with the right count.
func checkMemory(file string, want map[string]int) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("the memory server stored nothing: %w", err)
	}
	defer f.Close()
	got := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ent struct {
			Type         string   `json:"type"`
			Name         string   `json:"name"`
			Observations []string `json:"observations"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ent); err != nil || ent.Type != "entity" {
			continue
		}
		for _, o := range ent.Observations {
			var n int
			if _, err := fmt.Sscanf(o, "TODO lines: %d", &n); err == nil {
				got[ent.Name] = n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for name, n := range want {
		if got[name] != n {
			return fmt.Errorf("memory has %s = %d TODO lines, want %d", name, got[name], n)
		}
	}
	return nil
}
