package discovery_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codebridge/codebridge/discovery"
)

func Example() {
	home, err := os.MkdirTemp("", "codebridge-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(home)
	if err = os.Mkdir(filepath.Join(home, "MCPs"), 0o755); err != nil {
		panic(err)
	}
	err = os.WriteFile(filepath.Join(home, "MCPs", "servers.json"), []byte(`{"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
		       "cwd": "~/work", "description": "Files under /tmp"},
		"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"off": {"command": "x", "disabled": true},
		"github": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
	}}`), 0o644)
	if err != nil {
		panic(err)
	}

	env := map[string]string{"TOKEN": "s3cret"}
	servers, problems := discovery.Load(discovery.Options{
		Home:      home,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	for _, s := range servers {
		if s.URL != "" {
			fmt.Printf("%s: remote %s, %d header(s)\n", s.Name, s.URL, len(s.Headers))
		} else {
			fmt.Printf("%s: %s %s in %s (%s)\n", s.Name, s.Command, strings.Join(s.Args, " "),
				strings.Replace(s.Cwd, home, "~", 1), s.Description)
		}
	}
	for _, p := range problems {
		fmt.Println(strings.ReplaceAll(p.Error(), home, "~"))
	}
	// Output:
	// fs: npx -y @modelcontextprotocol/server-filesystem /tmp in ~/work (Files under /tmp)
	// remote: remote https://example.com/mcp, 1 header(s)
	// discovery: ~/MCPs/servers.json: server "github": field "headers.Authorization": environment variable "GITHUB_TOKEN" is not set; set it before starting codebridge, or write ${GITHUB_TOKEN:-default}
}
