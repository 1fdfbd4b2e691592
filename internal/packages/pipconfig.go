package packages

import (
	"context"
	"strings"
)

// kept are the settings of the user's own pip configuration (pip.conf
// files and PIP_* variables) that the host gives pip, which otherwise runs
// isolated: where the index is, and how to reach it. Settings that could
// point pip at files on the host (find-links, requirement or constraint
// files, no-binary, ...) are not among them.
var kept = []struct {
	key, flag string
	many      bool // a list of values, separated by white space
	index     bool // replaced by the package_index setting
}{
	{key: "index-url", flag: "--index-url", index: true},
	{key: "extra-index-url", flag: "--extra-index-url", many: true, index: true},
	{key: "trusted-host", flag: "--trusted-host", many: true},
	{key: "cert", flag: "--cert"},
	{key: "client-cert", flag: "--client-cert"},
	{key: "proxy", flag: "--proxy"},
}

// sectionRank orders the sections of pip's configuration as pip applies
// them to pip download: the environment over the command's section over
// the global one.
var sectionRank = map[string]int{"global": 1, "download": 2, ":env:": 3}

// indexArgs are pip's options for the index: --index-url from the
// package_index setting, else from the user's pip configuration, and the
// kept network settings of the user's pip configuration. The
// configuration is read once (pip config list); the caller holds in.mu.
func (in *Installer) indexArgs(ctx context.Context) []string {
	if in.userConfig == nil {
		out, err := in.runPip(ctx, true, nil, "config", "list")
		if err != nil && ctx.Err() != nil {
			return in.flags(nil)
		}
		if err != nil {
			in.opts.Log.Debug("packages: reading pip's configuration", "err", err)
		}
		in.userConfig = parsePipConfig(string(out))
		keys := make([]string, 0, len(in.userConfig))
		for k := range in.userConfig {
			keys = append(keys, k)
		}
		in.opts.Log.Debug("packages: settings kept from pip's configuration", "keys", keys)
	}
	return in.flags(in.userConfig)
}

// flags are pip's options for the kept settings and the index.
func (in *Installer) flags(config map[string]string) []string {
	var args []string
	if in.opts.Index != "" {
		args = append(args, "--index-url="+in.opts.Index)
	}
	for _, k := range kept {
		v, ok := config[k.key]
		if !ok || (k.index && in.opts.Index != "") {
			continue
		}
		values := []string{v}
		if k.many {
			values = strings.Fields(v)
		}
		for _, v := range values {
			args = append(args, k.flag+"="+v)
		}
	}
	return args
}

// parsePipConfig reads what pip config list printed (lines such as
// "global.index-url='https://pypi.example/simple'") into the kept
// settings, each from its highest-ranked section. A value that is not a
// plain quoted string is left out.
func parsePipConfig(out string) map[string]string {
	values, ranks := map[string]string{}, map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		section, name, dotted := strings.Cut(key, ".")
		rank := sectionRank[section]
		if !ok || !dotted || rank == 0 || !isKept(name) || rank < ranks[name] {
			continue
		}
		if len(value) < 2 || value[0] != '\'' || value[len(value)-1] != '\'' || strings.ContainsAny(value[1:len(value)-1], `'"\`) {
			continue
		}
		values[name], ranks[name] = value[1:len(value)-1], rank
	}
	return values
}

func isKept(name string) bool {
	for _, k := range kept {
		if k.key == name {
			return true
		}
	}
	return false
}
