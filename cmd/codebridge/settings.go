package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/spf13/pflag"
)

// Settings are data. Everything codebridge can be told is a field of a
// group, a struct per concern: the upstream servers, the sandbox, a run
// (flaggroups.go), the workspace (workspace.go), the state directory and
// the logs (flaggroups.go), the gate (gate.go), HTTP (http.go) and OAuth
// (oauth.go). A field's tags say everything about it:
//
//	flag:"name"     its flag ("name,repeatable": the flag may be given many
//	                times, its values adding to the variable's); none: it is
//	                read from the environment only
//	short:"t"       the flag's one-letter form
//	env:"A,B"       the environment variables that set it (the first set wins)
//	default:"512m"  its default, written as a user would write it
//	derived:"..."   for the reference, the rule of a default derived from
//	                other settings (one with no default of its own)
//	type:"size"     the value's name in help
//	usage:"..."     its help
//	doc:"..."       more words for the settings reference (docs/settings.md)
//	parse:"size"    how a value is read: an entry of parsers; a string is
//	                taken as it is, a time.Duration as seconds, a bool as
//	                true or false without one
//
// {name} in a default, a usage or a doc is tagText's entry: a default or a
// name another package states, written once there.
//
// A group may have a method complete(getenv), which derives what the group
// needs beyond its settings and checks it as a whole (the one place a
// group is validated). A command declares the groups it uses as a struct
// (or one group), gets exactly those, and shows the flags it names; a flag
// wins over the environment, which wins over the default. Some settings also
// answer to the variable of the Python code-execution bridge users may come
// from (MCP_BRIDGE_*), so that switching is one line.
//
// To add a setting:
//
//  1. Add a field to its group with the tags flag, env (CODEBRIDGE_*),
//     default, type and usage, and parse unless the field is a string, a
//     time.Duration or a bool: name an entry of parsers, or add one for a
//     new kind of value. A default another package states is {pkg.Name},
//     added to tagText; a check across fields goes in the group's complete.
//  2. Use the field where the group becomes a package's options
//     (bridgeOptions, engineOptions, httpOptions, ...), and add a case to
//     TestSettingsConfigs.
//  3. The commands that show the whole group (flagsOf) show the flag at
//     once; to show it on another, add its name to that command's list.
//  4. Run go generate ./cmd/codebridge, which rewrites docs/settings.md
//     (TestSettingsReferenceIsGenerated fails until then).

// settings are every group: what serve takes. The other commands take the
// groups they use: appSettings when they start codebridge, a struct of a
// few groups otherwise.
type settings struct {
	appSettings
	OAuth oauthFlags `title:"OAuth over HTTP"`
}

// appSettings are the groups newApp wires codebridge from.
type appSettings struct {
	Upstream  upstreamFlags  `title:"The upstream servers"`
	Sandbox   sandboxFlags   `title:"The sandbox"`
	Run       runFlags       `title:"A run"`
	State     stateFlags     `title:"The state directory"`
	Workspace workspaceFlags `title:"The workspace"`
	Log       logFlags       `title:"Logs"`
	Gate      gateFlags      `title:"The gate"`
	HTTP      httpFlags      `title:"Serving HTTP"`
}

// setting is one field of a group, as its tags describe it.
type setting struct {
	flag, short, def, derived, typ, usage, doc string
	envs                                       []string
	repeat                                     bool
	group                                      string // the title of the group it belongs to
	parse                                      parser
	index                                      []int // the field, from the struct of groups
}

// parser reads a setting's value into a value of the field's type (a slice
// field's values add up). check, when set, is a further check of a flag's
// value that a variable's does not get.
type parser struct {
	out   reflect.Type
	read  func(v string) (reflect.Value, error)
	check func(v string) error
}

// reads makes a parser of a function.
func reads[T any](f func(string) (T, error)) parser {
	return parser{out: reflect.TypeFor[T](), read: func(v string) (reflect.Value, error) {
		x, err := f(v)
		return reflect.ValueOf(&x).Elem(), err
	}}
}

// withCheck adds a check of a flag's value to p.
func withCheck(p parser, check func(string) error) parser {
	p.check = check
	return p
}

// parsers are how values are read, by the name a setting's parse tag gives.
var parsers = map[string]parser{
	"size":        reads(parseBytes),
	"positive":    reads(positiveInt),
	"count":       reads(positiveCount),
	"sandboxes":   reads(sandboxCount),
	"checkpoints": reads(parseCheckpoints),
	"cpus":        reads(parseCPUs),
	"configs":     withCheck(reads(func(v string) ([]string, error) { return pathList(v), nil }), configFileExists),
	"dirs":        reads(dirList),
	"commas":      reads(func(v string) ([]string, error) { return commaList(v), nil }),
	"command":     reads(parseCommand),
	"engine":      reads(parseEngine),
	"seccomp":     reads(parseSeccompProfile),
	"storage":     reads(parseStorageClass),
	"user":        reads(parseUser),
	"runtime":     reads(parseRuntime),
	"channel":     reads(parseChannel),
	"output":      reads(parseOutput),
	"level":       reads(parseLevel),
	"logformat":   reads(parseLogFormat),
	"workspace":   reads(parseWorkspace),
	"mounts":      reads(parseMounts),
	"policy":      reads(gate.ParseMode),
	"redact":      reads(parseRedact),
	"claim":       reads(parseClaim),
	"rules":       reads(parseRules),
	"secret file": reads(readSecret),
}

// byType are the parsers of a field without a parse tag, by its type.
var byType = map[reflect.Type]parser{
	reflect.TypeFor[string]():        reads(func(v string) (string, error) { return v, nil }),
	reflect.TypeFor[time.Duration](): reads(seconds),
	reflect.TypeFor[bool]():          reads(parseBool),
}

// tagRef is a {name} in a tag.
var tagRef = regexp.MustCompile(`\{[A-Za-z.]+\}`)

// expand replaces each {name} in a tag's text with tagText's entry.
func expand(field, text string) string {
	return tagRef.ReplaceAllStringFunc(text, func(ref string) string {
		v, ok := tagText[ref[1:len(ref)-1]]
		if !ok {
			panic("codebridge: setting " + field + " refers to " + ref + ", which tagText does not have")
		}
		return v
	})
}

// settingsOf are the settings of t, a group or a struct of groups, in the
// order of its fields. A field with a flag or env tag is a setting; a
// struct field without one is a group (or a struct of groups), whose
// settings are taken in turn. A tag that cannot work panics: every command
// builds its flags at start, so that no such mistake outlives a test.
func settingsOf(t reflect.Type) []setting {
	var out []setting
	var walk func(t reflect.Type, index []int, group string)
	walk = func(t reflect.Type, index []int, group string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			at := append(index[:len(index):len(index)], i)
			switch {
			case isSetting(f):
				out = append(out, newSetting(f, at, group))
			case isGroup(f):
				title := group
				if tt := f.Tag.Get("title"); tt != "" {
					title = tt
				}
				walk(f.Type, at, title)
			}
		}
	}
	walk(t, nil, "")
	return out
}

// isSetting reports whether f is a setting: it has a flag or a variable.
func isSetting(f reflect.StructField) bool {
	_, flag := f.Tag.Lookup("flag")
	_, env := f.Tag.Lookup("env")
	return flag || env
}

// isGroup reports whether f is a group, or a struct of groups: a struct
// field, exported or embedded, that is no setting.
func isGroup(f reflect.StructField) bool {
	return (f.IsExported() || f.Anonymous) && f.Type.Kind() == reflect.Struct && !isSetting(f)
}

// newSetting reads the tags of a setting's field.
func newSetting(f reflect.StructField, index []int, group string) setting {
	name, opt, _ := strings.Cut(f.Tag.Get("flag"), ",")
	s := setting{flag: name, short: f.Tag.Get("short"), typ: f.Tag.Get("type"), repeat: opt == "repeatable",
		def: expand(f.Name, f.Tag.Get("default")), derived: expand(f.Name, f.Tag.Get("derived")), usage: expand(f.Name, f.Tag.Get("usage")), doc: expand(f.Name, f.Tag.Get("doc")),
		group: group, index: index}
	if env := f.Tag.Get("env"); env != "" {
		s.envs = strings.Split(env, ",")
	}
	var ok bool
	if p := f.Tag.Get("parse"); p != "" {
		s.parse, ok = parsers[p]
	} else {
		s.parse, ok = byType[f.Type]
	}
	if !ok || !f.IsExported() || s.parse.out != f.Type || (opt != "" && opt != "repeatable") || (s.repeat && f.Type.Kind() != reflect.Slice) {
		panic(fmt.Sprintf("codebridge: setting %s (%s): it is unexported, its parse tag %q does not read a %s, or its flag tag %q is not name[,repeatable] on a list",
			f.Name, f.Tag.Get("flag"), f.Tag.Get("parse"), f.Type, f.Tag.Get("flag")))
	}
	return s
}

// flagsOf are the flags of G's settings, for the commands that show the
// whole group.
func flagsOf[G any]() []string {
	var out []string
	for _, s := range settingsOf(reflect.TypeFor[G]()) {
		if s.flag != "" {
			out = append(out, s.flag)
		}
	}
	return out
}

// apply sets the setting's field of the groups v to the value text: a
// list adds to what is there.
func (s *setting) apply(v reflect.Value, text string) error {
	x, err := s.parse.read(text)
	if err != nil {
		return err
	}
	f := v.FieldByIndex(s.index)
	if f.Kind() == reflect.Slice {
		x = reflect.AppendSlice(f, x)
	}
	f.Set(x)
	return nil
}

// flagValue records a setting's flag so that it can be applied after the
// environment; Set checks the value at once, so a bad flag is reported by
// the parser.
type flagValue struct {
	s    *setting
	vals []string
}

func (f *flagValue) String() string { return f.s.def }
func (f *flagValue) Type() string   { return f.s.typ }
func (f *flagValue) Set(v string) error {
	if !f.s.repeat && len(f.vals) > 0 {
		return fmt.Errorf("given twice")
	}
	if _, err := f.s.parse.read(v); err != nil {
		return err
	}
	if f.s.parse.check != nil {
		if err := f.s.parse.check(v); err != nil {
			return err
		}
	}
	f.vals = append(f.vals, v)
	return nil
}

// boundSettings are one command's settings: the groups it declared, and
// the flags it registered for them.
type boundSettings struct {
	groups reflect.Value // the struct of groups (or the group) the command declared
	list   []setting
	flags  map[string]*flagValue
}

// bindSettings registers on fs the flags of groups (a pointer to a group,
// or to a struct of groups) that flags names. defaults replace, for this
// command, the defaults of the settings whose flags they name.
func bindSettings(fs *pflag.FlagSet, groups any, flags []string, defaults map[string]string) *boundSettings {
	v := reflect.ValueOf(groups).Elem()
	b := &boundSettings{groups: v, list: settingsOf(v.Type()), flags: map[string]*flagValue{}}
	byFlag := map[string]*setting{}
	for i := range b.list {
		if s := &b.list[i]; s.flag != "" {
			if d, ok := defaults[s.flag]; ok {
				s.def = d
			}
			byFlag[s.flag] = s
		}
	}
	for _, name := range flags {
		s := byFlag[name]
		if s == nil {
			panic("codebridge: the command shows --" + name + ", which none of its groups has")
		}
		fv := &flagValue{s: s}
		b.flags[name] = fv
		fs.VarP(fv, name, s.short, s.usage+" ("+strings.Join(s.envs, ", ")+")")
		if s.typ == "bool" {
			fs.Lookup(name).NoOptDefVal = "true" // --allow-x alone means --allow-x=true
		}
	}
	return b
}

// resolve fills the groups: for each setting, its default, then the
// environment, then its flag (a repeatable flag adds to the environment);
// then each group completes itself.
func (b *boundSettings) resolve(getenv func(string) string) error {
	for i := range b.list {
		s := &b.list[i]
		var flagVals []string
		if fv := b.flags[s.flag]; fv != nil {
			flagVals = fv.vals
		}
		if len(flagVals) == 0 || s.repeat {
			if err := s.applyEnv(b.groups, getenv); err != nil {
				return err
			}
		}
		for _, v := range flagVals {
			if err := s.apply(b.groups, v); err != nil {
				return fmt.Errorf("--%s: %w", s.flag, err)
			}
		}
	}
	return complete(b.groups, getenv)
}

// applyEnv applies the first of the setting's variables that is set, or
// its default.
func (s *setting) applyEnv(v reflect.Value, getenv func(string) string) error {
	val, src := s.def, "default"
	for _, env := range s.envs {
		if e := getenv(env); e != "" {
			val, src = e, env
			break
		}
	}
	if val == "" {
		return nil
	}
	if err := s.apply(v, val); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// completer is a group that derives what it needs beyond its settings from
// them and the environment, and checks itself as a whole.
type completer interface {
	complete(getenv func(string) string) error
}

// complete completes the groups of v, then v itself.
func complete(v reflect.Value, getenv func(string) string) error {
	for i := 0; i < v.NumField(); i++ {
		if isGroup(v.Type().Field(i)) {
			if err := complete(v.Field(i), getenv); err != nil {
				return err
			}
		}
	}
	if p := v.Addr(); p.CanInterface() { // an embedded struct of groups cannot, and has nothing to complete
		if c, ok := p.Interface().(completer); ok {
			return c.complete(getenv)
		}
	}
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

// parseCheckpoints reads how many checkpoints for rewind a sandbox
// keeps: a whole number from 0 (none) to sandbox.MaxCheckpoints.
func parseCheckpoints(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > sandbox.MaxCheckpoints {
		return 0, fmt.Errorf("%q is not a number of checkpoints: give 0 (rewind off) to %d", v, sandbox.MaxCheckpoints)
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

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// commaList splits a comma-separated setting, dropping empty items.
func commaList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// pathList splits a list of paths joined by the system's separator,
// dropping empty items.
func pathList(v string) []string {
	var out []string
	for _, f := range filepath.SplitList(v) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func newLogger(w io.Writer, g logFlags) *slog.Logger {
	opts := &slog.HandlerOptions{Level: g.Level}
	var log *slog.Logger
	if g.JSON {
		log = slog.New(slog.NewJSONHandler(w, opts))
	} else {
		log = slog.New(slog.NewTextHandler(w, opts))
	}
	for _, msg := range g.ignored() {
		log.Debug("setting accepted for compatibility and ignored", "setting", msg)
	}
	return log
}

// secondsText is a default duration as the settings write it.
func secondsText(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) }
