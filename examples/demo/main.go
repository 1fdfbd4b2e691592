// Command demo drives a codebridge binary the way an agent's MCP client
// does: it connects over stdio, lists the tools, and runs a short Python
// snippet that calls the example upstream server in testdata/servers.
//
//	go run ./examples/demo -bin bin/codebridge
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const snippet = `import asyncio
print("servers:", runtime.discovered_servers())
print(await mcp_demo.echo(message="hello from the sandbox"))
sums = await asyncio.gather(*[mcp_demo.add(a=i, b=i) for i in range(5)])
print("sums computed upstream, in parallel:", sums)
stats = await mcp_demo.stats(values=[3, 4, 5])
stats["count"] * 10`

func main() {
	bin := flag.String("bin", "bin/codebridge", "the codebridge binary")
	flag.Parse()
	if err := run(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin string) error {
	stubPath, err := filepath.Abs("testdata/servers/stub_server.py")
	if err != nil {
		return err
	}
	cfg, err := os.CreateTemp("", "codebridge-demo-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(cfg.Name())
	conf := map[string]any{"mcpServers": map[string]any{
		"demo": map[string]any{"command": "python3", "args": []string{stubPath, "--name=demo"}, "description": "the example server in testdata"},
	}}
	if err = json.NewEncoder(cfg).Encode(conf); err != nil {
		return err
	}
	cfg.Close()

	cmd := exec.Command(bin, "serve", "--config", cfg.Name())
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "codebridge-demo", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", bin, err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	def, _ := json.Marshal(tools.Tools)
	fmt.Printf("codebridge shows %d tool (%d bytes of definition): %s\n\n", len(tools.Tools), len(def), tools.Tools[0].Name)
	fmt.Printf("run_python code:\n%s\n\n", snippet)

	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": snippet}})
	if err != nil {
		return err
	}
	fmt.Printf("result (%s, first call includes starting the sandbox):\n", time.Since(start).Round(time.Millisecond))
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Println(t.Text)
		}
	}
	if res.IsError {
		return fmt.Errorf("run_python reported an error")
	}
	return nil
}
