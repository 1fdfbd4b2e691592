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
}

// The errors a command ends with, each mapped to an exit code once, by
// exitStatus: a usageError (a mistake in the command line, printed with a
// hint: 2), an inputError (something given that cannot be used: 2), a failure
// (the command could not do its work: 1), an exitCode (the command has
// already said what went wrong). Any other error comes from the parser
// and is a mistake in the command line.

// exitCode is an error that ends the program with a given code; the
// command has already said what went wrong.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// errReported ends a command that has already reported its failure.
const errReported = exitCode(1)

// usageError is a mistake in the command line: it is printed with a hint
// and ends the program with code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// inputError is something the command was given that cannot be used: a
// flag's or a variable's value, a refused workspace or mount, a file that
// cannot be read. It ends the program with code 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// failure is a command that could not do its work: it ends the program
// with code 1. where, when set, names the part of the command that failed
// (rm, in "codebridge skills rm: ...").
type failure struct {
	where string
	err   error
}

func (e failure) Error() string { return e.err.Error() }
func (e failure) Unwrap() error { return e.err }

// run runs the command line argv and returns the exit code: 0 on success,
// 1 when the command failed, 2 for a mistake in the command line.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := c.rootCommand()
	args := defaultToServe(root, singleDashLongFlags(root, argv))
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	path := cmd.CommandPath()
	if len(argv) > 0 && args[0] == "serve" && argv[0] != "serve" {
		path = root.Name() // the user typed no command: name none
	}
	return exitStatus(stderr, path, err)
}

// exitStatus says what ended the command, unless it has said so itself,
// and returns the exit code: the one place an error becomes one.
func exitStatus(stderr io.Writer, path string, err error) int {
	var ec exitCode
	var se inputError
	var f failure
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return 2
	case errors.As(err, &f):
		if f.where != "" {
			path += " " + f.where
		}
		fmt.Fprintf(stderr, "%s: %v\n", path, f.err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v\n", path, err)
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
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
	root.SetFlagErrorFunc(flagError)
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
		c.sessionsCommand(),
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

// settingsCommand makes a command that takes settings: groups points to
// the groups it uses (a struct of groups, or one group), which are
// resolved from the environment and the flags before run runs; flags are
// the flags of theirs it shows (the rest are read from the environment
// only); logLevel is its default log level. An error run returns that is
// none of the kinds above is a failure (exit code 1).
func (c *cli) settingsCommand(cmd *cobra.Command, groups any, flags []string, logLevel string, run func(args []string) error) *cobra.Command {
	b := bindSettings(cmd.Flags(), groups, flags, map[string]string{"log-level": logLevel})
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := b.resolve(c.getenv); err != nil {
			return inputError{err}
		}
		return failed(run(args))
	}
	return cmd
}

// failed makes an error a command returned that is of no kind above a
// failure.
func failed(err error) error {
	var ec exitCode
	var ue usageError
	var ie inputError
	var f failure
	if err == nil || errors.As(err, &ec) || errors.As(err, &ue) || errors.As(err, &ie) || errors.As(err, &f) {
		return err
	}
	return failure{err: err}
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
