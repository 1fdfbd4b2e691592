package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/httpserve"
	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/upstream"
	"github.com/spf13/pflag"
)

// settings are everything codebridge can be told. Each has a CODEBRIDGE_*
// environment variable and, on the commands that use it, a flag; some also
// answer to the variable of the Python code-execution bridge users may come
// from (MCP_BRIDGE_*), so that switching is one line. A flag wins over the
// environment.
type settings struct {
	configs     []string
	engine      string
	image       string // empty: the built image when the engine has it, else the registry image
	timeout     time.Duration
	maxTimeout  time.Duration
	callTimeout time.Duration
	limits      sandbox.Limits
	channel     sandbox.ChannelMode
	user        string
	output      string
	outputLimit int
	stateDir    string // the root of codebridge's state on the host
	workspace   workspaceSetting
	mounts      []sandbox.Mount
	// sandboxWS and extraMounts are the checked workspace and mounts,
	// set by prepareWorkspace for the commands that run code.
	sandboxWS   *sandbox.Mount
	extraMounts []sandbox.Mount
	logLevel    slog.Level
	logJSON     bool
	pip         []string     // the command that runs pip on the host (on-demand packages)
	gate        gateSettings // policy, approval, audit, redaction (gate.go)
	// home is the home directory ($HOME); empty means the user's.
	home string
	// Serving HTTP (serve --http); see http.go.
	httpAddr       string
	tokenFile      string
	token          string // CODEBRIDGE_TOKEN
	tlsCert        string
	tlsKey         string
	idleTimeout    time.Duration
	maxSessions    int
	maxPerUser     int
	bodyTimeout    time.Duration
	warm           int
	allowedHosts   []string
	allowedOrigins []string
	// ignored lists the Python bridge's settings that were given and have
	// no meaning here, for a debug log line each.
	ignored []string
	// roots are directories given to upstreams as roots when the client
	// has none (--root).
	roots []string
}

// setting describes one knob: its flag (empty for a variable that has
// none), the environment variables that set it (first set wins), its
// default and how to apply a value.
type setting struct {
	flag  string
	envs  []string
	def   string
	typ   string // the value's name in help
	usage string
	set   func(s *settings, v string) error
}

// The knob groups commands pick from.
var (
	serverKnobs  = []string{"config", "call-timeout", "root"}
	sandboxKnobs = []string{"engine", "image", "memory", "pids", "cpus", "tmp-size", "user", "oci-runtime", "channel", "pip"}
	runKnobs     = []string{"timeout", "max-timeout", "output", "output-limit"}
	logKnobs     = []string{"log-level", "log-format"}
	// workspaceKnobs are taken by the commands that run code.
	workspaceKnobs = []string{"workspace", "mount"}
	httpKnobs      = []string{"http", "token-file", "tls-cert", "tls-key", "idle-timeout", "max-sessions", "max-sessions-per-user", "body-timeout", "warm", "allowed-hosts", "allowed-origins"}
)

// Log levels by default: the server logs what it does; the other commands
// print their results and only warnings and errors besides.
const (
	serveLogLevel   = "info"
	commandLogLevel = "warn"
)

var knobs = []setting{
	{"config", []string{"CODEBRIDGE_CONFIG", "MCP_SERVERS_CONFIG"}, "", "file", "extra mcpServers config files (repeatable; the variables take a " + string(os.PathListSeparator) + "-separated list), read after ~/MCPs/*.json",
		func(s *settings, v string) error {
			for _, f := range filepath.SplitList(v) {
				if f != "" {
					s.configs = append(s.configs, f)
				}
			}
			return nil
		}},
	{"engine", []string{"CODEBRIDGE_ENGINE", "MCP_BRIDGE_RUNTIME"}, "auto", "name", "container engine: auto, podman or docker",
		func(s *settings, v string) error {
			v = strings.ToLower(v)
			if v != "auto" && v != "podman" && v != "docker" {
				return fmt.Errorf("%q is not an engine: use auto, podman or docker", v)
			}
			s.engine = v
			return nil
		}},
	{"image", []string{"CODEBRIDGE_IMAGE", "MCP_BRIDGE_IMAGE"}, "", "image", "sandbox image (must have python3); by default " + imagebuild.DefaultTag +
		" (what codebridge image build makes) when the engine has it, else " + sandbox.DefaultImage,
		func(s *settings, v string) error { s.image = v; return nil }},
	{"timeout", []string{"CODEBRIDGE_TIMEOUT", "MCP_BRIDGE_TIMEOUT"}, secondsText(bridge.DefaultTimeout), "seconds", "default run_python timeout in seconds",
		func(s *settings, v string) (err error) { s.timeout, err = seconds(v); return }},
	{"max-timeout", []string{"CODEBRIDGE_MAX_TIMEOUT", "MCP_BRIDGE_MAX_TIMEOUT"}, secondsText(bridge.DefaultMaxTimeout), "seconds", "largest timeout a call may ask for, in seconds",
		func(s *settings, v string) (err error) { s.maxTimeout, err = seconds(v); return }},
	{"call-timeout", []string{"CODEBRIDGE_CALL_TIMEOUT"}, secondsText(upstream.DefaultCallTimeout), "seconds", "time limit of one upstream tool call, in seconds (a server's \"timeout\" overrides it)",
		func(s *settings, v string) (err error) { s.callTimeout, err = seconds(v); return }},
	{"memory", []string{"CODEBRIDGE_MEMORY", "MCP_BRIDGE_MEMORY"}, strconv.Itoa(sandbox.DefaultMemory>>20) + "m", "size", "sandbox memory limit, e.g. 512m or 2g",
		func(s *settings, v string) (err error) { s.limits.Memory, err = parseBytes(v); return }},
	{"tmp-size", []string{"CODEBRIDGE_TMP_SIZE"}, strconv.Itoa(sandbox.DefaultTmpSize>>20) + "m", "size", "size of the sandbox's /tmp, and of /workspace when it is ephemeral, e.g. 256m or 1g",
		func(s *settings, v string) (err error) { s.limits.TmpSize, err = parseBytes(v); return }},
	{"pids", []string{"CODEBRIDGE_PIDS", "MCP_BRIDGE_PIDS"}, strconv.Itoa(sandbox.DefaultPids), "n", "sandbox process limit",
		func(s *settings, v string) (err error) { s.limits.Pids, err = positiveInt(v); return }},
	{"cpus", []string{"CODEBRIDGE_CPUS", "MCP_BRIDGE_CPUS"}, strconv.Itoa(sandbox.DefaultCPUs), "n", "sandbox CPU limit",
		func(s *settings, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return fmt.Errorf("%q is not a positive number of CPUs", v)
			}
			s.limits.CPUs = f
			return nil
		}},
	{"user", []string{"CODEBRIDGE_USER", "MCP_BRIDGE_CONTAINER_USER"}, "65534:65534", "uid:gid", "user the sandbox code runs as (never root: uid 0 and gid 0 are refused)",
		func(s *settings, v string) (err error) { s.user, err = parseUser(v); return }},
	{"oci-runtime", []string{"CODEBRIDGE_OCI_RUNTIME"}, "", "name", "OCI runtime for the sandbox, such as runsc (gVisor) or kata; empty means the engine's default",
		func(s *settings, v string) error {
			if !ociRuntimeName.MatchString(v) {
				return fmt.Errorf("%q is not a runtime name: give the name the engine knows, such as runsc", v)
			}
			s.limits.Runtime = v
			return nil
		}},
	{"channel", []string{"CODEBRIDGE_CHANNEL"}, string(sandbox.DefaultChannel), "mode", "how the sandbox's frames travel: auto (a Unix socket the bridge owns, mounted into that sandbox alone, where the engine runs on this machine; else the engine's attach stream) or attach (always the attach stream)",
		func(s *settings, v string) (err error) {
			s.channel, err = sandbox.ParseChannelMode(strings.ToLower(v))
			return
		}},
	{"output", []string{"CODEBRIDGE_OUTPUT", "MCP_BRIDGE_OUTPUT_MODE"}, "text", "mode", "how results are rendered: text, or toon (structured values as TOON)",
		func(s *settings, v string) error {
			switch v = strings.ToLower(v); v {
			case "text", "toon":
				s.output = v
			case "compact": // the Python bridge's name for plain text
				s.output = "text"
			default:
				return fmt.Errorf("%q is not an output mode: use text or toon", v)
			}
			return nil
		}},
	{"output-limit", []string{"CODEBRIDGE_OUTPUT_LIMIT"}, strconv.Itoa(sandbox.DefaultOutputLimit), "chars", "characters of stdout and of stderr a result keeps (head and tail)",
		func(s *settings, v string) (err error) {
			n, err := positiveInt(v)
			s.outputLimit = int(n)
			return err
		}},
	{"state-dir", []string{"CODEBRIDGE_STATE_DIR", "MCP_BRIDGE_STATE_DIR"}, "", "dir", "root of codebridge's state on the host (default $XDG_STATE_HOME/codebridge, or ~/.local/state/codebridge): saved skills, the wheel cache of on-demand packages, the audit log",
		func(s *settings, v string) error { s.stateDir = v; return nil }},
	{"workspace", []string{"CODEBRIDGE_WORKSPACE"}, DefaultWorkspace, "where", "the sandbox's /workspace: project (an engine volume of the working directory's project), an engine volume name, a host directory (a path), or ephemeral",
		func(s *settings, v string) (err error) { s.workspace, err = parseWorkspace(v); return }},
	{"mount", []string{"CODEBRIDGE_MOUNTS"}, "", "HOST[:CONTAINER][:ro|rw]", "a host directory the code may read (repeatable; read-only unless :rw; default CONTAINER /mnt/NAME); the variable takes a ;-separated list",
		func(s *settings, v string) error {
			for _, one := range strings.Split(v, ";") {
				if one = strings.TrimSpace(one); one == "" {
					continue
				}
				m, err := parseMount(one)
				if err != nil {
					return err
				}
				s.mounts = append(s.mounts, m)
			}
			return nil
		}},
	{"log-level", []string{"CODEBRIDGE_LOG_LEVEL", "MCP_BRIDGE_LOG_LEVEL"}, "", "level", "debug, info, warn or error (logs go to stderr)",
		func(s *settings, v string) error {
			v = strings.ToLower(v)
			switch v { // the Python bridge takes Python's level names
			case "warning":
				v = "warn"
			case "critical", "fatal":
				v = "error"
			}
			if err := s.logLevel.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("%q is not a log level: use debug, info, warn or error", v)
			}
			return nil
		}},
	{"log-format", []string{"CODEBRIDGE_LOG_FORMAT"}, "text", "format", "text or json",
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
	{"pip", []string{"CODEBRIDGE_PIP"}, "python3 -m pip", "command", "the command that runs pip on the host, for runtime.install (packages on demand)",
		func(s *settings, v string) error {
			s.pip = strings.Fields(v)
			if len(s.pip) == 0 {
				return fmt.Errorf("%q is not a command: give one such as \"python3 -m pip\"", v)
			}
			return nil
		}},
	{"root", []string{"CODEBRIDGE_ROOTS"}, "", "dir", "a directory upstream servers get as a root when the MCP client gives none (repeatable; the variable takes a " + string(os.PathListSeparator) + "-separated list)",
		func(s *settings, v string) error {
			for _, d := range filepath.SplitList(v) {
				if d == "" {
					continue
				}
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					return fmt.Errorf("%q is not a directory; give an existing directory", d)
				}
				s.roots = append(s.roots, d)
			}
			return nil
		}},
	{"policy", []string{"CODEBRIDGE_POLICY"}, string(gate.Open), "mode", "what sandbox code may call by default, from the tools' annotations: open (everything), ask-destructive (ask the user before tools not marked read-only or non-destructive), read-only (only tools marked read-only); a server's \"tools\" rules come first",
		func(s *settings, v string) (err error) { s.gate.policy, err = gate.ParseMode(v); return }},
	{"audit", []string{"CODEBRIDGE_AUDIT"}, "", "file", "the audit log (JSON Lines) of every tool call and run_python; default audit.jsonl in the state directory; off turns it off",
		func(s *settings, v string) error { s.gate.audit = v; return nil }},
	{"audit-args", []string{"CODEBRIDGE_AUDIT_ARGS"}, "false", "bool", "keep tool arguments in the audit log (as the sandbox wrote them, tokens and all), not only their size and SHA-256",
		func(s *settings, v string) (err error) { s.gate.auditArgs, err = parseBool(v); return }},
	{"redact", []string{"CODEBRIDGE_REDACT"}, "", "kinds", "personal data the model sees only as tokens (<email_1>): comma-separated email, phone, card, ssn, ip, iban, or all; custom patterns go in the config's \"redact\"",
		func(s *settings, v string) (err error) { s.gate.redact, err = parseRedact(v); return }},
	{"approval-timeout", []string{"CODEBRIDGE_APPROVAL_TIMEOUT"}, strconv.Itoa(int(gate.DefaultApprovalTimeout.Seconds())), "seconds", "how long a call that needs the user's approval waits for the answer (then it is denied)",
		func(s *settings, v string) (err error) { s.gate.approvalTimeout, err = seconds(v); return }},
	{"http", []string{"CODEBRIDGE_HTTP"}, "", "addr", "serve MCP over streamable HTTP on this address (such as 127.0.0.1:8080) instead of stdio: a sandbox per session",
		func(s *settings, v string) error { s.httpAddr = v; return nil }},
	{"token-file", []string{"CODEBRIDGE_TOKEN_FILE"}, "", "file", "bearer tokens HTTP clients must send, one a line (or: name token); CODEBRIDGE_TOKEN adds one",
		func(s *settings, v string) error { s.tokenFile = v; return nil }},
	{"", []string{"CODEBRIDGE_TOKEN"}, "", "", "",
		func(s *settings, v string) error { s.token = v; return nil }},
	{"tls-cert", []string{"CODEBRIDGE_TLS_CERT"}, "", "file", "TLS certificate (PEM) for HTTP; with --tls-key",
		func(s *settings, v string) error { s.tlsCert = v; return nil }},
	{"tls-key", []string{"CODEBRIDGE_TLS_KEY"}, "", "file", "TLS private key (PEM) for HTTP; with --tls-cert",
		func(s *settings, v string) error { s.tlsKey = v; return nil }},
	{"idle-timeout", []string{"CODEBRIDGE_IDLE_TIMEOUT"}, strconv.Itoa(int(httpserve.DefaultIdleTimeout.Seconds())), "seconds", "end an HTTP session, and remove its sandbox, after this many seconds without a request",
		func(s *settings, v string) (err error) { s.idleTimeout, err = seconds(v); return }},
	{"max-sessions", []string{"CODEBRIDGE_MAX_SESSIONS"}, strconv.Itoa(httpserve.DefaultMaxSessions), "n", "most HTTP sessions open at once; more are refused",
		func(s *settings, v string) error {
			n, err := positiveInt(v)
			s.maxSessions = int(n)
			return err
		}},
	{"max-sessions-per-user", []string{"CODEBRIDGE_MAX_SESSIONS_PER_USER"}, strconv.Itoa(httpserve.DefaultMaxSessionsPerUser), "n", "most HTTP sessions one user (a token's name in --token-file) has open at once; more are refused",
		func(s *settings, v string) error {
			n, err := positiveInt(v)
			s.maxPerUser = int(n)
			return err
		}},
	{"body-timeout", []string{"CODEBRIDGE_BODY_TIMEOUT"}, secondsText(httpserve.DefaultBodyTimeout), "seconds", "time an HTTP request's body may take to arrive; a later one is refused and its connection closed",
		func(s *settings, v string) (err error) { s.bodyTimeout, err = seconds(v); return }},
	{"warm", []string{"CODEBRIDGE_WARM"}, strconv.Itoa(bridge.DefaultWarm), "n", "sandboxes kept started for new HTTP sessions (0: none)",
		func(s *settings, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%q is not a number of sandboxes (0 or more)", v)
			}
			s.warm = n
			return nil
		}},
	{"allowed-hosts", []string{"CODEBRIDGE_ALLOWED_HOSTS"}, "", "names", "comma-separated host names HTTP requests may address, besides loopback and the address listened on",
		func(s *settings, v string) error { s.allowedHosts = commaList(v); return nil }},
	{"allowed-origins", []string{"CODEBRIDGE_ALLOWED_ORIGINS"}, "", "origins", "comma-separated browser origins (https://app.example.com) whose requests are served; others are refused",
		func(s *settings, v string) error { s.allowedOrigins = commaList(v); return nil }},
	// The Python bridge's settings that mean nothing here: accepted, so
	// that its documented values never stop codebridge from starting.
	{"", []string{"MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT"}, "", "", "",
		func(s *settings, v string) error {
			s.ignored = append(s.ignored, "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT: codebridge does not manage a Podman machine")
			return nil
		}},
	{"", []string{"MCP_BRIDGE_ALLOW_SELF_SERVER"}, "", "", "",
		func(s *settings, v string) error {
			s.ignored = append(s.ignored, "MCP_BRIDGE_ALLOW_SELF_SERVER: codebridge always skips entries that would launch itself")
			return nil
		}},
}

// shorthands are the one-letter forms of setting flags.
var shorthands = map[string]string{"timeout": "t"}

var ociRuntimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)

// knob returns the setting with the given flag name.
func knob(name string) *setting {
	for i := range knobs {
		if knobs[i].flag == name {
			return &knobs[i]
		}
	}
	panic("codebridge: no setting " + name)
}

// flagValue records a setting's flag so that it can be applied after the
// environment; Set checks the value at once, so a bad flag is reported by
// the parser.
type flagValue struct {
	k    *setting
	def  string // shown in help
	vals []string
}

func (f *flagValue) String() string { return f.def }
func (f *flagValue) Type() string   { return f.k.typ }
func (f *flagValue) Set(v string) error {
	if f.k.flag != "config" && f.k.flag != "mount" && f.k.flag != "root" && len(f.vals) > 0 {
		return fmt.Errorf("given twice")
	}
	if err := f.k.set(&settings{}, v); err != nil {
		return err
	}
	if f.k.flag == "config" {
		if err := configFileExists(v); err != nil {
			return err
		}
	}
	f.vals = append(f.vals, v)
	return nil
}

// configFileExists checks the files a --config flag names: one that does
// not exist is a mistake in the command line, not a configuration to warn
// about. (A variable may name a file that comes later; discovery reports
// that one.)
func configFileExists(v string) error {
	for _, f := range filepath.SplitList(v) {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("config file %s does not exist; give the path of an existing mcpServers file", f)
		}
	}
	return nil
}

// settingFlags are the setting flags one command registered.
type settingFlags struct {
	values   map[string]*flagValue
	logLevel string // this command's default log level
}

// addSettingFlags registers the flags of the named settings on fs.
// logLevel is the command's default log level.
func addSettingFlags(fs *pflag.FlagSet, names []string, logLevel string) *settingFlags {
	sf := &settingFlags{values: map[string]*flagValue{}, logLevel: logLevel}
	for _, name := range names {
		k := knob(name)
		def := k.def
		if name == "log-level" {
			def = logLevel
		}
		v := &flagValue{k: k, def: def}
		sf.values[name] = v
		fs.VarP(v, name, shorthands[name], k.usage+" ("+strings.Join(k.envs, ", ")+")")
	}
	return sf
}

// resolve computes the settings: for each, its default, then the
// environment, then its flag.
func (sf *settingFlags) resolve(getenv func(string) string) (*settings, error) {
	s := &settings{}
	if err := knob("log-level").set(s, sf.logLevel); err != nil {
		return nil, err
	}
	for i := range knobs {
		k := &knobs[i]
		var flagVals []string
		if fv := sf.values[k.flag]; fv != nil && k.flag != "" {
			flagVals = fv.vals
		}
		if len(flagVals) == 0 || k.flag == "config" || k.flag == "mount" || k.flag == "root" { // config, mount, root: flags add to the variables
			val, src := k.def, "default"
			for _, env := range k.envs {
				if v := getenv(env); v != "" {
					val, src = v, env
					break
				}
			}
			if val != "" {
				if err := k.set(s, val); err != nil {
					return nil, fmt.Errorf("%s: %w", src, err)
				}
			}
		}
		for _, v := range flagVals {
			if err := k.set(s, v); err != nil {
				return nil, fmt.Errorf("--%s: %w", k.flag, err)
			}
		}
	}
	if s.timeout > s.maxTimeout {
		s.timeout = s.maxTimeout
	}
	s.stateDir = stateDir(s.stateDir, getenv)
	s.home = getenv("HOME")
	return s, nil
}

// stateDir is the state directory root: the setting with a leading ~
// expanded, else $XDG_STATE_HOME/codebridge, else ~/.local/state/codebridge.
func stateDir(set string, getenv func(string) string) string {
	home := getenv("HOME")
	switch {
	case set == "~" || strings.HasPrefix(set, "~/"):
		return filepath.Join(home, set[1:])
	case set != "":
		return set
	case getenv("XDG_STATE_HOME") != "":
		return filepath.Join(getenv("XDG_STATE_HOME"), "codebridge")
	}
	return filepath.Join(home, ".local", "state", "codebridge")
}

// parseUser checks a uid[:gid] (numbers, or names) and refuses root: uid 0
// or gid 0 in any spelling ("0", "00", "root").
func parseUser(v string) (string, error) {
	parts := strings.Split(v, ":")
	if len(parts) > 2 {
		return "", fmt.Errorf("%q is not uid:gid; use numbers such as 65534:65534", v)
	}
	for i, p := range parts {
		what := [...]string{"uid", "gid"}[i]
		if p == "" {
			return "", fmt.Errorf("%q has an empty %s; use numbers such as 65534:65534", v, what)
		}
		n, err := strconv.ParseUint(p, 10, 32)
		isNumber := err == nil
		if (isNumber && n == 0) || (!isNumber && p == "root") {
			return "", fmt.Errorf("%q would run model-written code with %s 0 (root); use an unprivileged uid:gid such as 65534:65534", v, what)
		}
		if !isNumber && strings.Trim(p, "0123456789") == "" {
			return "", fmt.Errorf("%q: %s %s is out of range", v, what, p)
		}
	}
	return v, nil
}

// seconds reads a number of seconds, with or without an "s" (the Python
// bridge documents "30s").
func seconds(v string) (time.Duration, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "s"), 64)
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
	var log *slog.Logger
	if s.logJSON {
		log = slog.New(slog.NewJSONHandler(w, opts))
	} else {
		log = slog.New(slog.NewTextHandler(w, opts))
	}
	for _, msg := range s.ignored {
		log.Debug("setting accepted for compatibility and ignored", "setting", msg)
	}
	return log
}

// secondsText is a default duration as the settings write it.
func secondsText(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) }
