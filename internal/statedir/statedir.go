// Package statedir owns codebridge's state on the host: one directory
// (the --state-dir setting; by default $XDG_STATE_HOME/codebridge, else
// ~/.local/state/codebridge) with one entry per kind of state, so that
// every feature that keeps something between runs keeps it in the same
// place, with the same permissions. The host never runs code it stores.
//
// The entries, each owned by the feature named:
//
//	skills/        saved skills, one readable .py file each
//	audit.jsonl    the audit log of tool calls and run_python calls
//	packages/      the cache of wheels for on-demand installs
//	workspaces/    persistent sandbox workspaces kept as host directories
//	shapes/        the observed shapes of tool results, one file per
//	               upstream server (package shapes), named by a hash of
//	               the server's name
//	catalogue/     what each upstream server listed (tools, resources,
//	               templates, prompts), one file per server (package
//	               upstream), named by a hash of the server's name, so
//	               that a new bridge searches without starting servers
//	principals/    one directory per principal other than the local user
//	               (a token holder over HTTP), holding its own skills/
//	               and shapes/, and the catalogue/ of its per_session
//	               servers
//	team/          what the host published for every principal (skills/),
//	               read by sessions, written only by host-side commands
//
// The local user's state (stdio, exec, the host-side commands) is at the
// root; [Dir.Of] is the state directory of another principal, below
// principals/, so that nothing one principal writes is read by another.
// Directories are created on first use, readable by the user only.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Entries of the state directory.
const (
	Skills     = "skills"
	Audit      = "audit.jsonl"
	Packages   = "packages"
	Workspaces = "workspaces"
	Shapes     = "shapes"
	Catalogue  = "catalogue"
	Principals = "principals"
	Team       = "team"
)

// Dir is the state directory's root.
type Dir string

// Path is the path of an entry (and parts below it), without creating it.
func (d Dir) Path(entry string, parts ...string) string {
	return filepath.Join(append([]string{string(d), entry}, parts...)...)
}

// Of is the state directory of the principal whose key is given
// (principal.Principal.Key): d itself for the local user (""), else
// principals/KEY below it. A key that is not one plain path component
// is a programming error and panics: keys are made by package principal,
// never taken from a request.
func (d Dir) Of(key string) Dir {
	if key == "" {
		return d
	}
	if key != filepath.Base(key) || key == "." || key == ".." || strings.ContainsAny(key, `/\`) || strings.HasPrefix(key, ".") {
		panic(fmt.Sprintf("statedir: %q is not a principal's key", key))
	}
	if d == "" {
		return d
	}
	return Dir(d.Path(Principals, key))
}

// Team is the state the host publishes for every principal, which
// sessions read and only host-side commands write.
func (d Dir) Team() Dir {
	if d == "" {
		return d
	}
	return Dir(d.Path(Team))
}

// Ensure creates the directory of an entry (and parts below it) when it is
// missing, mode 0700, and returns its path.
func (d Dir) Ensure(entry string, parts ...string) (string, error) {
	if d == "" {
		return "", fmt.Errorf("statedir: no state directory is set: pass --state-dir or set CODEBRIDGE_STATE_DIR")
	}
	p := d.Path(entry, parts...)
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("statedir: creating %s: %w; check that the state directory (--state-dir) is writable", p, err)
	}
	return p, nil
}

// EnsureParent creates the directory that holds a file entry (audit.jsonl)
// and returns the file's path.
func (d Dir) EnsureParent(entry string) (string, error) {
	if d == "" {
		return "", fmt.Errorf("statedir: no state directory is set: pass --state-dir or set CODEBRIDGE_STATE_DIR")
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return "", fmt.Errorf("statedir: creating %s: %w; check that the state directory (--state-dir) is writable", d, err)
	}
	return d.Path(entry), nil
}

// WriteFile replaces the file at path with data at once: data goes to a
// new file beside it, which is renamed over path, so that a reader sees
// the old file or the new one and never a part of either. The new file
// is readable by the user only.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
