package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Packages are the package settings of the config files: top-level keys
// beside "mcpServers".
//
//	{"mcpServers": {...},
//	 "packages": ["pandas", "matplotlib>=3.8"],  // installed into every new sandbox
//	 "allow_packages": ["pandas", "numpy*"],     // names the sandbox may install
//	 "package_index": "https://pypi.example/simple"}
type Packages struct {
	// Start are requirements installed into every new sandbox, from all
	// files in order.
	Start []string
	// Allow are globs of installable names, from all files; nil when no
	// file sets allow_packages (the installer's default applies).
	Allow []string
	// Index is the first package_index set; empty means pip's own.
	Index string
}

// LoadPackages reads the package settings of the files Load reads, in the
// same order. A file that cannot be read is Load's to report; a key of the
// wrong type is a Problem here.
func LoadPackages(opts Options) (Packages, []Problem) {
	l, files := configFiles(opts)
	var p Packages
	for _, f := range files {
		l.packagesOf(f, &p)
	}
	return p, l.problems
}

// packagesOf adds one file's package settings to p.
func (l *loader) packagesOf(path string, p *Packages) {
	top := topLevel(path)
	if top == nil {
		return
	}
	list := func(key string) ([]string, bool) {
		raw, ok := top[key]
		if !ok {
			return nil, false
		}
		var v []string
		if err := json.Unmarshal(raw, &v); err != nil {
			l.problem(path, "", key, fmt.Errorf(`must be a list of strings, such as ["pandas", "numpy>=2"], not %s`, kindOf(raw)))
			return nil, false
		}
		return v, true
	}
	if v, ok := list("packages"); ok {
		p.Start = append(p.Start, v...)
	}
	if v, ok := list("allow_packages"); ok {
		p.Allow = append(append([]string{}, p.Allow...), v...)
	}
	if raw, ok := top["package_index"]; ok && p.Index == "" {
		if err := json.Unmarshal(raw, &p.Index); err != nil {
			l.problem(path, "", "package_index", fmt.Errorf("must be a URL string, not %s", kindOf(raw)))
		}
	}
}

// configFiles lists the files Load reads, in its order (~/MCPs/*.json,
// then opts.Files), for the readers of other top-level keys.
func configFiles(opts Options) (*loader, []string) {
	l := &loader{home: opts.Home}
	if l.home == "" {
		l.home, _ = os.UserHomeDir()
	}
	var files []string
	if l.home != "" {
		files = l.listDir(filepath.Join(l.home, "MCPs"))
	}
	return l, append(files, opts.Files...)
}

// topLevel is a config file's top-level object, or nil when the file
// cannot be read or is not one (Load reports that).
func topLevel(path string) map[string]json.RawMessage {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimPrefix(data, utf8BOM), &top) != nil {
		return nil
	}
	return top
}
