package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runExec runs a Python file (or stdin) through the same sandbox run_python
// uses and prints what the model would read: text to stdout, images as a
// note. It exits 1 when the code failed.
func runExec(c *cli, argv []string) int {
	var servers string
	var timeout float64
	s, rest, code := c.parse("exec", argv, func(fs *flag.FlagSet) {
		fs.StringVar(&servers, "servers", "", "comma-separated servers to start before the code runs")
		fs.Float64Var(&timeout, "t", 0, "this run's timeout in seconds (default: the timeout setting)")
	})
	if s == nil {
		return code
	}
	if len(rest) != 1 {
		fmt.Fprintln(c.stderr, "codebridge exec: give one FILE, or - to read the code from stdin")
		return 2
	}
	var src []byte
	var err error
	if rest[0] == "-" {
		src, err = io.ReadAll(c.stdin)
	} else {
		src, err = os.ReadFile(rest[0])
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge exec: reading the code: %v\n", err)
		return 2
	}

	a := newApp(s, c.stderr)
	a.logProblems()
	defer a.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var names []string
	for _, n := range strings.Split(servers, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	res := a.bridge.RunPython(ctx, string(src), time.Duration(timeout*float64(time.Second)), names)
	for _, content := range res.Content {
		switch ct := content.(type) {
		case *mcp.TextContent:
			fmt.Fprint(c.stdout, ct.Text)
			if !strings.HasSuffix(ct.Text, "\n") {
				fmt.Fprintln(c.stdout)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(c.stdout, "[image: %s, %d bytes]\n", ct.MIMEType, len(ct.Data))
		}
	}
	if res.IsError {
		return 1
	}
	return 0
}
