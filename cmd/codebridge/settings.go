package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// settings are everything codebridge can be told, in one typed group per
// concern (flaggroups.go): the upstream servers, the sandbox, a run, the
// workspace, the state directory, the logs, the gate and HTTP. Each
// setting has a CODEBRIDGE_* environment variable and, on the commands
// that use it, a flag; some also answer to the variable of the Python
// code-execution bridge users may come from (MCP_BRIDGE_*), so that
// switching is one line. A flag wins over the environment.
//
// They hold what the user set (and the defaults), nothing derived from
// the file system: the workspace a command runs code in is a runPlan,
// made from them (workspace.go).
type settings struct {
	upstreamFlags
	sandboxFlags
	runFlags
	workspaceFlags
	stateFlags
	logFlags
	gate      gateFlags  // policy, approval, audit, redaction (gate.go)
	httpFlags            // serving HTTP (http.go)
	oauth     oauthFlags // OAuth over HTTP (oauth.go)
	// home is the home directory ($HOME); empty means the user's.
	home string
}

// knob describes one setting of a group G: its flag (empty for a variable
// that has none), the environment variables that set it (the first set
// wins), its default, the value's name in help, its help, and how a value
// is applied to the group. A repeatable flag may be given many times, and
// its values add to the variable's; checkFlag, when set, is a further
// check of a flag's value that the variable's does not get.
type knob[G any] struct {
	flag      string
	envs      []string
	def       string
	typ       string
	usage     string
	repeat    bool
	set       func(g *G, v string) error
	checkFlag func(v string) error
}

// entry is a knob bound to its group's place in the settings: what the
// command line and the environment see.
type entry struct {
	flag, def, typ, usage string
	envs                  []string
	repeat                bool
	apply                 func(s *settings, v string) error
	check                 func(v string) error // a flag's value on its own, for the parser
}

// bind binds the knobs of a group to the group's place in the settings.
func bind[G any](place func(*settings) *G, table []knob[G]) []entry {
	out := make([]entry, len(table))
	for i, k := range table {
		out[i] = entry{flag: k.flag, def: k.def, typ: k.typ, usage: k.usage, envs: k.envs, repeat: k.repeat,
			apply: func(s *settings, v string) error { return k.set(place(s), v) },
			check: func(v string) error {
				var scratch G
				if err := k.set(&scratch, v); err != nil {
					return err
				}
				if k.checkFlag != nil {
					return k.checkFlag(v)
				}
				return nil
			}}
	}
	return out
}

// flagNames are the flags of a group's knobs, for the commands that take
// the whole group.
func flagNames[G any](table []knob[G]) []string {
	var out []string
	for _, k := range table {
		if k.flag != "" {
			out = append(out, k.flag)
		}
	}
	return out
}

// entries are every setting, group by group, in the order they are
// resolved.
var entries = slices.Concat(
	bind(func(s *settings) *upstreamFlags { return &s.upstreamFlags }, upstreamKnobs),
	bind(func(s *settings) *sandboxFlags { return &s.sandboxFlags }, sandboxKnobs),
	bind(func(s *settings) *runFlags { return &s.runFlags }, runKnobs),
	bind(func(s *settings) *stateFlags { return &s.stateFlags }, stateKnobs),
	bind(func(s *settings) *workspaceFlags { return &s.workspaceFlags }, workspaceKnobs),
	bind(func(s *settings) *logFlags { return &s.logFlags }, logKnobs),
	bind(func(s *settings) *gateFlags { return &s.gate }, gateKnobs),
	bind(func(s *settings) *httpFlags { return &s.httpFlags }, httpKnobs),
	bind(func(s *settings) *oauthFlags { return &s.oauth }, oauthKnobs),
)

// entryFor returns the setting with the given flag name.
func entryFor(name string) *entry {
	for i := range entries {
		if entries[i].flag == name {
			return &entries[i]
		}
	}
	panic("codebridge: no setting " + name)
}

// shorthands are the one-letter forms of setting flags.
var shorthands = map[string]string{"timeout": "t"}

// flagValue records a setting's flag so that it can be applied after the
// environment; Set checks the value at once, so a bad flag is reported by
// the parser.
type flagValue struct {
	e    *entry
	def  string // shown in help
	vals []string
}

func (f *flagValue) String() string { return f.def }
func (f *flagValue) Type() string   { return f.e.typ }
func (f *flagValue) Set(v string) error {
	if !f.e.repeat && len(f.vals) > 0 {
		return fmt.Errorf("given twice")
	}
	if err := f.e.check(v); err != nil {
		return err
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
		e := entryFor(name)
		def := e.def
		if name == "log-level" {
			def = logLevel
		}
		v := &flagValue{e: e, def: def}
		sf.values[name] = v
		fs.VarP(v, name, shorthands[name], e.usage+" ("+strings.Join(e.envs, ", ")+")")
	}
	return sf
}

// resolve computes the settings: for each, its default, then the
// environment, then its flag (a repeatable flag adds to the environment);
// then each group's own checks.
func (sf *settingFlags) resolve(getenv func(string) string) (*settings, error) {
	s := &settings{}
	if err := s.logFlags.setLevel(sf.logLevel); err != nil {
		return nil, err
	}
	for i := range entries {
		e := &entries[i]
		var flagVals []string
		if fv := sf.values[e.flag]; fv != nil && e.flag != "" {
			flagVals = fv.vals
		}
		if len(flagVals) == 0 || e.repeat {
			if err := e.applyEnv(s, getenv); err != nil {
				return nil, err
			}
		}
		for _, v := range flagVals {
			if err := e.apply(s, v); err != nil {
				return nil, fmt.Errorf("--%s: %w", e.flag, err)
			}
		}
	}
	s.home = getenv("HOME")
	s.stateDir = stateDir(s.stateDir, getenv)
	if s.timeout > s.maxTimeout { // a default above the cap is the cap
		s.timeout = s.maxTimeout
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// applyEnv applies the first of the setting's variables that is set, or
// its default.
func (e *entry) applyEnv(s *settings, getenv func(string) string) error {
	val, src := e.def, "default"
	for _, env := range e.envs {
		if v := getenv(env); v != "" {
			val, src = v, env
			break
		}
	}
	if val == "" {
		return nil
	}
	if err := e.apply(s, val); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// validate has each package check the configuration its group resolves
// to, so that a value the parsers let through is still refused with the
// package's own words.
func (s *settings) validate() error {
	if err := s.sandboxConfig(nil, nil).Validate(); err != nil {
		return err
	}
	if err := s.bridgeOptions().Validate(); err != nil {
		return err
	}
	if cfg := s.oauth.config(); cfg != nil {
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	return s.gate.config().Validate()
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

// positiveCount reads a positive whole number that fits an int.
func positiveCount(v string) (int, error) {
	n, err := positiveInt(v)
	if err == nil && int64(int(n)) != n {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return int(n), err
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
