package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox"
)

// settings are everything codebridge can be told. Each has a flag and a
// CODEBRIDGE_* environment variable, and some also answer to the variable
// of the Python code-execution bridge users may come from (MCP_BRIDGE_*),
// so that switching is one line. A flag wins over the environment.
type settings struct {
	configs     []string
	engine      string
	image       string
	timeout     time.Duration
	maxTimeout  time.Duration
	callTimeout time.Duration
	limits      sandbox.Limits
	user        string
	output      string
	outputLimit int
	stateDir    string
	logLevel    slog.Level
	logJSON     bool
}

// setting describes one knob: its flag, the environment variables that set
// it (first set wins), its default and how to apply a value.
type setting struct {
	flag  string
	envs  []string
	def   string
	usage string
	set   func(s *settings, v string) error
}

var knobs = []setting{
	{"config", []string{"CODEBRIDGE_CONFIG", "MCP_SERVERS_CONFIG"}, "", "extra mcpServers config `file`s (repeatable; the variables take a " + string(os.PathListSeparator) + "-separated list), read after ~/MCPs/*.json",
		func(s *settings, v string) error {
			for _, f := range filepath.SplitList(v) {
				if f != "" {
					s.configs = append(s.configs, f)
				}
			}
			return nil
		}},
	{"engine", []string{"CODEBRIDGE_ENGINE", "MCP_BRIDGE_RUNTIME"}, "auto", "container engine: auto, podman or docker",
		func(s *settings, v string) error {
			v = strings.ToLower(v)
			if v != "auto" && v != "podman" && v != "docker" {
				return fmt.Errorf("%q is not an engine: use auto, podman or docker", v)
			}
			s.engine = v
			return nil
		}},
	{"image", []string{"CODEBRIDGE_IMAGE", "MCP_BRIDGE_IMAGE"}, sandbox.DefaultImage, "sandbox image (must have python3)",
		func(s *settings, v string) error { s.image = v; return nil }},
	{"timeout", []string{"CODEBRIDGE_TIMEOUT", "MCP_BRIDGE_TIMEOUT"}, "30", "default run_python timeout in seconds",
		func(s *settings, v string) (err error) { s.timeout, err = seconds(v); return }},
	{"max-timeout", []string{"CODEBRIDGE_MAX_TIMEOUT", "MCP_BRIDGE_MAX_TIMEOUT"}, "120", "largest timeout a call may ask for, in seconds",
		func(s *settings, v string) (err error) { s.maxTimeout, err = seconds(v); return }},
	{"call-timeout", []string{"CODEBRIDGE_CALL_TIMEOUT"}, "120", "time limit of one upstream tool call, in seconds (a server's \"timeout\" overrides it)",
		func(s *settings, v string) (err error) { s.callTimeout, err = seconds(v); return }},
	{"memory", []string{"CODEBRIDGE_MEMORY", "MCP_BRIDGE_MEMORY"}, "512m", "sandbox memory limit, e.g. 512m or 2g",
		func(s *settings, v string) (err error) { s.limits.Memory, err = parseBytes(v); return }},
	{"pids", []string{"CODEBRIDGE_PIDS", "MCP_BRIDGE_PIDS"}, "128", "sandbox process limit",
		func(s *settings, v string) (err error) { s.limits.Pids, err = positiveInt(v); return }},
	{"cpus", []string{"CODEBRIDGE_CPUS", "MCP_BRIDGE_CPUS"}, "1", "sandbox CPU limit",
		func(s *settings, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return fmt.Errorf("%q is not a positive number of CPUs", v)
			}
			s.limits.CPUs = f
			return nil
		}},
	{"user", []string{"CODEBRIDGE_USER", "MCP_BRIDGE_CONTAINER_USER"}, "65534:65534", "uid:gid the sandbox code runs as (never root)",
		func(s *settings, v string) error {
			if v == "0" || v == "root" || strings.HasPrefix(v, "0:") || strings.HasPrefix(v, "root:") {
				return fmt.Errorf("%q would run model-written code as root; use an unprivileged uid such as 65534:65534", v)
			}
			s.user = v
			return nil
		}},
	{"output", []string{"CODEBRIDGE_OUTPUT", "MCP_BRIDGE_OUTPUT_MODE"}, "text", "how results are rendered: text, or toon (structured values as TOON)",
		func(s *settings, v string) error {
			v = strings.ToLower(v)
			if v != "text" && v != "toon" {
				return fmt.Errorf("%q is not an output mode: use text or toon", v)
			}
			s.output = v
			return nil
		}},
	{"output-limit", []string{"CODEBRIDGE_OUTPUT_LIMIT"}, "20000", "characters of stdout and of stderr a result keeps (head and tail)",
		func(s *settings, v string) (err error) {
			n, err := positiveInt(v)
			s.outputLimit = int(n)
			return err
		}},
	{"state-dir", []string{"CODEBRIDGE_STATE_DIR", "MCP_BRIDGE_STATE_DIR"}, "", "accepted for compatibility; codebridge keeps no state on the host",
		func(s *settings, v string) error { s.stateDir = v; return nil }},
	{"log-level", []string{"CODEBRIDGE_LOG_LEVEL", "MCP_BRIDGE_LOG_LEVEL"}, "info", "debug, info, warn or error (logs go to stderr)",
		func(s *settings, v string) error {
			if err := s.logLevel.UnmarshalText([]byte(strings.ToLower(v))); err != nil {
				return fmt.Errorf("%q is not a log level: use debug, info, warn or error", v)
			}
			return nil
		}},
	{"log-format", []string{"CODEBRIDGE_LOG_FORMAT"}, "text", "text or json",
		func(s *settings, v string) error {
			switch strings.ToLower(v) {
			case "text":
				s.logJSON = false
			case "json":
				s.logJSON = true
			default:
				return fmt.Errorf("%q is not a log format: use text or json", v)
			}
			return nil
		}},
}

// flagValue applies a flag through its setting, so defaults, environment
// and flags share one parser.
type flagValue struct {
	s    *settings
	k    *setting
	seen bool
	last string
}

func (f *flagValue) String() string { return f.last }
func (f *flagValue) Set(v string) error {
	if f.k.flag != "config" && f.seen {
		return fmt.Errorf("given twice")
	}
	f.seen, f.last = true, v
	return f.k.set(f.s, v)
}

// parseSettings reads defaults, then the environment, then the flags in
// argv into fs. It returns the remaining arguments.
func parseSettings(fs *flag.FlagSet, argv []string, getenv func(string) string) (*settings, []string, error) {
	s := &settings{}
	values := make([]*flagValue, len(knobs))
	for i := range knobs {
		k := &knobs[i]
		val := k.def
		src := "default"
		for _, env := range k.envs {
			if v := getenv(env); v != "" {
				val, src = v, env
				break
			}
		}
		if val != "" {
			if err := k.set(s, val); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", src, err)
			}
		}
		values[i] = &flagValue{s: s, k: k}
		usage := k.usage + " (" + strings.Join(k.envs, ", ") + ")"
		fs.Var(values[i], k.flag, usage)
	}
	if err := fs.Parse(argv); err != nil {
		return nil, nil, err
	}
	if s.timeout > s.maxTimeout {
		s.timeout = s.maxTimeout
	}
	return s, fs.Args(), nil
}

// newFlagSet returns a flag set for a subcommand whose usage lists its
// arguments and every setting.
func newFlagSet(name, args, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("codebridge "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: codebridge %s [flags] %s\n\n%s\n\nflags:\n", name, args, about)
		fs.PrintDefaults()
	}
	return fs
}

func seconds(v string) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a positive number of seconds", v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

func positiveInt(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number", v)
	}
	return n, nil
}

// parseBytes reads sizes such as 512m, 2g, 1.5GiB or 1048576.
func parseBytes(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "ib"), "b")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult, s = 1<<10, s[:n-1]
		case 'm':
			mult, s = 1<<20, s[:n-1]
		case 'g':
			mult, s = 1<<30, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a size: use a number with k, m or g (e.g. 512m)", v)
	}
	return int64(f * float64(mult)), nil
}

func newLogger(w io.Writer, s *settings) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.logLevel}
	if s.logJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
