// Command codebridge is a stdio MCP server that gives an agent one tool,
// run_python, whose code runs in a persistent, hardened container where
// every configured upstream MCP server is a set of Python functions.
//
// Usage:
//
//	codebridge [serve]            serve MCP over stdin/stdout (the default)
//	codebridge doctor             check the engine, image, limits and servers
//	codebridge servers            list the configured servers
//	codebridge tools [SERVER]     list what the servers offer
//	codebridge search QUERY       ranked search over every server's tools
//	codebridge exec FILE|-        run Python through the sandbox
//	codebridge image build        build the sandbox image
//	codebridge import             copy MCP servers from other clients' configs
//	codebridge version            print the version
//
// Upstream servers are read from ~/MCPs/*.json (and --config files) in the
// mcpServers format. Logs go to stderr; stdout carries only MCP when serving.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

func main() {
	// A large tool result passes through several buffers (the upstream's
	// JSON-RPC line, the decoded result, the frame to the sandbox). A soft
	// memory limit makes the garbage collector free each one before the
	// next grows the heap, so the peak stays near the live data instead of
	// a multiple of it. GOMEMLIMIT, when set, wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// command is one subcommand.
type command struct {
	name, args, about string
	run               func(c *cli, argv []string) int
}

// cli is what every subcommand gets: its streams and environment.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// commands is filled in init: the commands' functions refer to it.
var commands []command

func init() {
	commands = []command{
		{"serve", "", "Serve MCP over stdin/stdout: the one tool run_python. This is what MCP clients start.", runServe},
		{"doctor", "", "Check the container engine, the image, whether limits apply, and every configured server.", runDoctor},
		{"servers", "", "List the configured upstream servers and where each is defined.", runServers},
		{"tools", "[SERVER]", "List the tools of one server, or of all of them.", runTools},
		{"search", "QUERY", "Ranked search over the tools of every server (what runtime.search_tool_docs does).", runSearch},
		{"exec", "FILE|-", "Run Python through the sandbox, as run_python would, and print its output.", runExec},
		{"image", "build", "Build the sandbox image (from a registry base if reachable, else from Debian packages).", runImage},
		{"import", "", "Read the MCP servers of Claude Desktop, Claude Code, Cursor and VS Code and write ~/MCPs files.", runImport},
		{"version", "", "Print the version.", runVersion},
	}
}

func run(argv []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	name := "serve"
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		name, argv = argv[0], argv[1:]
	}
	if name == "help" || name == "--help" || name == "-h" {
		usage(stdout)
		return 0
	}
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd.run(c, argv)
		}
	}
	fmt.Fprintf(stderr, "codebridge: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "codebridge: one run_python tool for all your MCP servers\n\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  codebridge %-16s %s\n", strings.TrimSpace(c.name+" "+c.args), c.about)
	}
	fmt.Fprintln(w, "\nRun \"codebridge COMMAND -h\" for a command's flags.")
}

// parse parses the settings and flags of a subcommand. It returns nil and an
// exit code when the command should stop (help, or bad flags).
func (c *cli) parse(name string, argv []string, extra func(fs *flag.FlagSet)) (*settings, []string, int) {
	var cmd command
	for _, k := range commands {
		if k.name == name {
			cmd = k
		}
	}
	fs := newFlagSet(cmd.name, cmd.args, cmd.about, c.stderr)
	if extra != nil {
		extra(fs)
	}
	s, rest, err := parseSettings(fs, argv, c.getenv)
	if errors.Is(err, flag.ErrHelp) {
		return nil, nil, 0
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge %s: %v\n", name, err)
		return nil, nil, 2
	}
	return s, rest, -1
}

func runVersion(c *cli, argv []string) int {
	fmt.Fprintln(c.stdout, "codebridge", version())
	return 0
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
