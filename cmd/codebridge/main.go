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
//	codebridge skills             list, show or delete saved skills
//	codebridge workspace          list or remove the workspace volumes (one per project)
//	codebridge version            print the version
//
// Upstream servers are read from ~/MCPs/*.json (and --config files) in the
// mcpServers format. Logs go to stderr; stdout carries only MCP when serving.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// cli is what every subcommand gets: its streams and environment.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	outDir         string // exec --out
}

// exitCode is an error that ends the program with a given code; the
// command has already said what went wrong.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a mistake in the command line: it is printed with a hint
// and ends the program with code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// code turns a command's result into an error for cobra.
func code(c int) error {
	if c == 0 {
		return nil
	}
	return exitCode(c)
}

// run runs the command line argv and returns the exit code: 0 on success,
// 1 when the command failed, 2 for a mistake in the command line.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := c.rootCommand()
	root.SetArgs(defaultToServe(root, singleDashLongFlags(root, argv)))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return 2
}

// rootCommand builds the command tree.
func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "codebridge",
		Short: "codebridge: one run_python tool for all your MCP servers",
		Long: `codebridge: one run_python tool for all your MCP servers.

Without a command it serves MCP over stdin/stdout (what MCP clients start),
taking serve's flags. Upstream servers are read from ~/MCPs/*.json.`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.AddCommand(
		c.serveCommand(),
		c.doctorCommand(),
		c.serversCommand(),
		c.toolsCommand(),
		c.searchCommand(),
		c.execCommand(),
		c.imageCommand(),
		c.importCommand(),
		c.skillsCommand(),
		c.workspaceCommand(),
		c.auditCommand(),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				fmt.Fprintln(c.stdout, "codebridge", version())
				return nil
			},
		},
	)
	return root
}

// settingsCommand makes a command that takes the named settings as flags.
// Its run function gets the resolved settings and returns an exit code.
func (c *cli) settingsCommand(cmd *cobra.Command, names []string, logLevel string, runFn func(s *settings, args []string) int) *cobra.Command {
	sf := addSettingFlags(cmd.Flags(), names, logLevel)
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		s, err := sf.resolve(c.getenv)
		if err != nil {
			fmt.Fprintf(c.stderr, "%s: %v\n", cmd.CommandPath(), err)
			return exitCode(2)
		}
		return code(runFn(s, args))
	}
	return cmd
}

// defaultToServe makes serve the command when none is named: a bare
// `codebridge`, or one followed by serve's flags. Help and version stay the
// root's.
func defaultToServe(root *cobra.Command, argv []string) []string {
	if len(argv) == 0 {
		return []string{"serve"}
	}
	switch a := argv[0]; {
	case a == "--version" || a == "-v":
		// The version command prints it: a cobra version template would
		// reach text/template, whose reflective method calls keep the
		// linker from dropping unused methods (2 MB more resident).
		return []string{"version"}
	case a == "-h" || a == "--help":
		return argv
	case strings.HasPrefix(a, "-"):
		return append([]string{"serve"}, argv...)
	}
	return argv
}

// singleDashLongFlags rewrites -name to --name for the long flags the
// commands define, so command lines written for Go's flag package (which
// accepts both) keep working.
func singleDashLongFlags(root *cobra.Command, argv []string) []string {
	long := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if a == "--" {
			copy(out[i:], argv[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && long[name] {
			out[i] = "-" + a
		}
	}
	return out
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// exactArgs accepts exactly n arguments, and otherwise says what to give.
func exactArgs(n int, hint string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Sprintf("%s (got %d arguments)", hint, len(args))}
		}
		return nil
	}
}
