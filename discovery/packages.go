package discovery

import (
	"encoding/json"
	"fmt"
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

// packagesOf adds one file's package settings.
func (l *loader) packagesOf(path string, top map[string]json.RawMessage) {
	p := &l.packages
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
