package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one entry of an mcpServers config, and how the bench starts
// the same server directly.
type server struct {
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Description string            `json:"description,omitempty"`
}

// npm is one of the npm reference servers installed in testdata/npm.
func (e *env) npm(bin string, args ...string) server {
	return server{Command: filepath.Join(e.repo, "testdata/npm/node_modules/.bin", bin), Args: args}
}

// everything is the npm reference server whose echo the latency figures use.
func (e *env) everything() server { return e.npm("mcp-server-everything") }

// filesystem serves dir.
func (e *env) filesystem(dir string) server { return e.npm("mcp-server-filesystem", dir) }

// memory keeps its knowledge graph in file.
func (e *env) memory(file string) server {
	s := e.npm("mcp-server-memory")
	s.Env = map[string]string{"MEMORY_FILE_PATH": file}
	return s
}

// stub is the stdlib Python server in testdata/servers.
func (e *env) stub() server {
	return server{Command: "python3", Args: []string{filepath.Join(e.repo, "testdata/servers/stub_server.py")}}
}

// catalogue is this program serving its generated 1,000-tool catalogue.
func (e *env) catalogue() server {
	return server{Command: e.self, Args: []string{catalogueCommand}, Description: "a generated catalogue of 1,000 tools"}
}

// writeConfig writes an mcpServers file named name into the bench's
// scratch directory and returns its path.
func (e *env) writeConfig(name string, servers map[string]server) (string, error) {
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(e.tmp, name)
	return p, os.WriteFile(p, b, 0o644)
}

// direct connects a go-sdk MCP client straight to s, with no codebridge in
// between: the baseline every comparison is made against.
func direct(ctx context.Context, s server) (*mcp.ClientSession, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "codebridge-bench-direct", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.Command, err)
	}
	return cs, nil
}

// listTools returns every tool of a session, all pages.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}
