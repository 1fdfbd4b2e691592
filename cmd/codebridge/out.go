package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// copyShared copies the files a run shared (its resource links) into
// outDir, keeping their paths under /workspace. It reports each copy,
// or why it failed, and returns false when one failed.
func (c *cli) copyShared(ctx context.Context, a *app, res *mcp.CallToolResult, outDir string) bool {
	ok := true
	for _, content := range res.Content {
		link, isLink := content.(*mcp.ResourceLink)
		if !isLink || !strings.HasPrefix(link.URI, bridge.WorkspaceURI) {
			continue
		}
		if err := c.copyOne(ctx, a, link.URI, outDir); err != nil {
			fmt.Fprintf(c.stderr, "codebridge exec --out: %s\n", termtext.Line(err.Error())) // it names the sandbox's path
			ok = false
		}
	}
	return ok
}

func (c *cli) copyOne(ctx context.Context, a *app, uri, outDir string) error {
	data, _, err := a.bridge.ReadWorkspace(ctx, uri)
	if err != nil {
		return err
	}
	rel := strings.TrimPrefix(uri, bridge.WorkspaceURI)
	if p, err := bridge.WorkspaceRel(uri); err == nil {
		rel = p
	}
	dest := filepath.Join(outDir, filepath.FromSlash(rel))
	if !within(dest, outDir) || dest == filepath.Clean(outDir) {
		return fmt.Errorf("%s would be written outside %s; not copied", uri, outDir)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("copying %s: %w", uri, err)
	}
	if err := os.WriteFile(dest, data, 0o644); err != nil {
		return fmt.Errorf("copying %s: %w", uri, err)
	}
	fmt.Fprintf(c.stderr, "codebridge exec: copied %s to %s (%d bytes)\n", termtext.Line(uri), termtext.Line(dest), len(data))
	return nil
}
