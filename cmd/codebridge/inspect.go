package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/protocol"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runServers lists the configured servers without starting them.
func runServers(c *cli, argv []string) int {
	var asJSON bool
	s, _, code := c.parse("servers", argv, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	})
	if s == nil {
		return code
	}
	a := newApp(s, c.stderr)
	a.logProblems()
	defer a.close()
	if asJSON {
		return printJSON(c.stdout, a.specs)
	}
	if len(a.specs) == 0 {
		fmt.Fprintln(c.stdout, "no servers configured: add mcpServers files to ~/MCPs/ (see `codebridge import`)")
		return 0
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tLAUNCH\tDEFINED IN\tDESCRIPTION")
	for _, sp := range a.specs {
		launch := sp.URL
		if launch == "" {
			launch = strings.TrimSpace(sp.Command + " " + strings.Join(sp.Args, " "))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", sp.Name, clip(launch, 50), sp.Source, clip(sp.Description, 60))
	}
	w.Flush()
	if len(a.problems) > 0 {
		return 1
	}
	return 0
}

// runTools starts servers and lists their tools.
func runTools(c *cli, argv []string) int {
	var asJSON bool
	s, rest, code := c.parse("tools", argv, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print JSON (with schemas)")
	})
	if s == nil {
		return code
	}
	a := newApp(s, c.stderr)
	a.logProblems()
	defer a.close()
	servers := a.pool.Servers()
	if len(rest) > 0 {
		one, err := a.pool.Get(rest[0])
		if err != nil {
			fmt.Fprintln(c.stderr, "codebridge tools:", err)
			return 1
		}
		servers = []*upstream.Server{one}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type listing struct {
		Server string      `json:"server"`
		Tools  []*mcp.Tool `json:"tools,omitempty"`
		Error  string      `json:"error,omitempty"`
	}
	out := make([]listing, len(servers))
	done := make(chan int)
	for i, sv := range servers {
		go func() {
			out[i].Server = sv.Name()
			tools, err := sv.Tools(ctx)
			out[i].Tools = tools
			if err != nil {
				out[i].Error = err.Error()
			}
			done <- i
		}()
	}
	for range servers {
		<-done
	}
	if asJSON {
		return printJSON(c.stdout, out)
	}
	failed := 0
	for _, l := range out {
		if l.Error != "" {
			failed++
			fmt.Fprintf(c.stdout, "%s: unavailable: %s\n\n", l.Server, l.Error)
			continue
		}
		fmt.Fprintf(c.stdout, "%s (%d tools)\n", l.Server, len(l.Tools))
		for _, t := range l.Tools {
			fmt.Fprintf(c.stdout, "  %-28s %s\n", t.Name, clip(firstLine(t.Description), 90))
		}
		fmt.Fprintln(c.stdout)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// runSearch ranks the tools of every server for a query.
func runSearch(c *cli, argv []string) int {
	var asJSON bool
	var limit int
	s, rest, code := c.parse("search", argv, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		fs.IntVar(&limit, "n", 10, "how many results")
	})
	if s == nil {
		return code
	}
	if len(rest) == 0 {
		fmt.Fprintln(c.stderr, "codebridge search: give a QUERY, e.g. codebridge search read file")
		return 2
	}
	a := newApp(s, c.stderr)
	a.logProblems()
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	entries, down := a.pool.Catalogue(ctx, 30*time.Second)
	hits := upstream.Rank(strings.Join(rest, " "), entries, limit)
	if asJSON {
		out := []protocol.SearchHit{}
		for _, h := range hits {
			out = append(out, bridge.SearchHit(h, false))
		}
		return printJSON(c.stdout, out)
	}
	for _, h := range hits {
		fmt.Fprintf(c.stdout, "%5.1f  %s.%s  %s\n", h.Score, h.Server, h.Tool.Name, clip(firstLine(h.Tool.Description), 80))
	}
	if len(hits) == 0 {
		fmt.Fprintln(c.stdout, "no tool matches")
	}
	for _, d := range down {
		fmt.Fprintf(c.stderr, "not searched: %s: %v\n", d.Server, d.Err)
	}
	return 0
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
