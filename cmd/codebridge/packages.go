package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/packages"
)

// packagesFor sets up on-demand installs from the config files' package
// settings. The configured packages are always allowed.
func (a *app) packagesFor(st stateFlags, pip []string, cfg discovery.Packages) *bridge.Packages {
	allow := cfg.Allow
	if allow != nil {
		for _, r := range cfg.Start {
			if name, err := packages.Name(r); err == nil {
				allow = append(allow, name)
			}
		}
	}
	in := packages.New(packages.Options{State: st.dir(), Allow: allow, Index: cfg.Index, Pip: pip, Log: a.log})
	return &bridge.Packages{Installer: in, Start: cfg.Start}
}

// packagesCheck says whether on-demand installs will work: pip runs on
// the host, and the configured packages are in the cache for the sandbox's
// Python.
func packagesCheck(ctx context.Context, p *bridge.Packages) check {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	version, err := p.Installer.Available(ctx)
	ch := check{Name: "packages", TookMS: time.Since(start).Milliseconds()}
	if err != nil { // the rest of codebridge works: a warning, not a failure
		ch.OK, ch.Warn = true, true
		ch.Detail = "on-demand installs (runtime.install) will fail: " + err.Error()
		ch.Fix = "apt install python3-pip (or set --pip to a pip command)"
		return ch
	}
	ch.OK = true
	if f := strings.Fields(version); len(f) >= 2 {
		version = f[0] + " " + f[1]
	}
	ch.Detail = "runtime.install works (" + version + " on the host)"
	if len(p.Start) > 0 {
		t, known := p.Installer.LastTarget()
		if _, cached := p.Installer.Lookup(p.Start, t); !known || !cached {
			ch.Warn = true
			ch.Detail += fmt.Sprintf("; the configured packages (%s) are not cached yet: the first cell installs them", strings.Join(p.Start, " "))
		} else {
			ch.Detail += fmt.Sprintf("; the configured packages (%s) are cached", strings.Join(p.Start, " "))
		}
	}
	return ch
}
