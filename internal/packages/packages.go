package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/statedir"
)

// DefaultAllow is the allow-list when none is configured: every name on
// the configured index. Wheels only ever run inside the sandbox (no
// network, no host files), and pip builds nothing on the host.
var DefaultAllow = []string{"*"}

// DefaultPip is the command that runs pip on the host.
var DefaultPip = []string{"python3", "-m", "pip"}

// Options configure an [Installer].
type Options struct {
	// State is the state directory; wheels are cached in its packages/.
	State statedir.Dir
	// Allow are globs of the package names the sandbox may ask for (its
	// requirements; their dependencies come with them). Nil means
	// [DefaultAllow]; an empty, non-nil list allows nothing.
	Allow []string
	// Index is the index URL given to pip (--index-url). Empty means the
	// index of the user's pip configuration (index-url and extra-index-url
	// in pip.conf or PIP_*), by default PyPI; pip reads nothing else of it.
	Index string
	// Pip is the command that runs pip. Nil means [DefaultPip].
	Pip []string
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
}

// Installer resolves requirements into cached wheels. It is safe for
// concurrent use.
type Installer struct {
	opts Options
	mu   sync.Mutex // serializes resolutions, so one download serves a repeated request
	// userConfig are the kept settings of the user's pip configuration,
	// once read (under mu).
	userConfig map[string]string
}

// New returns an installer.
func New(opts Options) *Installer {
	if opts.Allow == nil {
		opts.Allow = DefaultAllow
	}
	if len(opts.Pip) == 0 {
		opts.Pip = DefaultPip
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Installer{opts: opts}
}

// Wheel is one cached wheel.
type Wheel struct {
	File   string `json:"file"` // its file name, which carries its tags
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Set is the wheels that satisfy one request.
type Set struct {
	Requirements []string `json:"requirements"`
	Target       Target   `json:"target"`
	Index        string   `json:"index,omitempty"`
	Wheels       []Wheel  `json:"wheels"`
	// Cached is true when the set came from the cache, without pip.
	Cached bool `json:"-"`
	// Downloaded counts the bytes pip put into the cache for this request.
	Downloaded int64 `json:"-"`
	// Took is how long resolving took.
	Took time.Duration `json:"-"`
}

// Kind is what went wrong with an install: the closed set the sandbox
// is told about.
type Kind string

// The kinds of [Error].
const (
	// Refused: not a package name, a name the allow-list does not match,
	// a target that is not wheel tags, a dependency that is not a name on
	// the index (a direct reference) or that the host cannot read, or an
	// answer of the index that is not the wheel asked for.
	Refused Kind = "refused"
	// NotFound: the index has no package of that name.
	NotFound Kind = "not-found"
	// NoWheel: the package has no wheel for the sandbox's Python.
	NoWheel Kind = "no-wheel"
	// Conflict: the versions asked for cannot be met together.
	Conflict Kind = "conflict"
	// Unreachable: the host could not reach the index.
	Unreachable Kind = "unreachable"
	// NoPip: pip does not run on the host.
	NoPip Kind = "no-pip"
	// Stopped: the install's deadline came before pip finished.
	Stopped Kind = "stopped"
	// Failed: anything else; the host's log says what.
	Failed Kind = "failed"
)

// Error is a refused or failed install. Its message is for the sandbox:
// the host writes it from the request alone, never from pip's output, so
// it holds no host path and no traceback.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Check refuses requirements the host does not accept, or whose names the
// allow-list does not match; it returns them in canonical form
// ([requirement.String]), the only form that reaches pip.
func (in *Installer) Check(reqs []string) ([]string, error) {
	if len(reqs) == 0 {
		return nil, &Error{Kind: Refused, Msg: "name at least one package to install, such as install(\"pandas\")"}
	}
	if len(reqs) > maxRequirements {
		return nil, &Error{Kind: Refused, Msg: fmt.Sprintf("%d requirements in one install: at most %d", len(reqs), maxRequirements)}
	}
	canon := make([]string, len(reqs))
	for i, r := range reqs {
		req, err := parseRequirement(r)
		if err != nil {
			return nil, &Error{Kind: Refused, Msg: err.Error()}
		}
		if !allowed(req.Name, in.opts.Allow) {
			return nil, &Error{Kind: Refused, Msg: fmt.Sprintf("the package %q is not allowed here: allow_packages is %q; the user can add it to allow_packages in a codebridge config file", req.Name, in.opts.Allow)}
		}
		canon[i] = req.String()
	}
	slices.Sort(canon)
	return slices.Compact(canon), nil
}

// Resolve returns the wheels that satisfy reqs on target: from the cache
// when the same request was resolved before (unless upgrade), else from
// pip. The wheels are in the cache when it returns; [Installer.Open]
// reads them.
func (in *Installer) Resolve(ctx context.Context, reqs []string, target Target, upgrade bool) (*Set, error) {
	start := time.Now()
	reqs, err := in.Check(reqs)
	if err != nil {
		return nil, err
	}
	if err = target.Check(); err != nil {
		return nil, &Error{Kind: Refused, Msg: err.Error()}
	}
	root, err := in.opts.State.Ensure(statedir.Packages)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	manifest := in.manifest(reqs, target)
	if !upgrade {
		if set, ok := in.cached(manifest); ok {
			set.Took = time.Since(start)
			in.opts.Log.Info("packages from the cache", "requirements", reqs, "wheels", len(set.Wheels), "took", set.Took)
			return set, nil
		}
	}
	set, err := in.download(ctx, root, reqs, target)
	if err != nil {
		return nil, err
	}
	if err := writeJSON(manifest, set); err != nil {
		in.opts.Log.Warn("packages: recording a resolution in the cache", "err", err)
	}
	set.Took = time.Since(start)
	in.opts.Log.Info("packages downloaded", "requirements", reqs, "wheels", len(set.Wheels), "bytes", set.Downloaded, "took", set.Took)
	return set, nil
}

// Lookup is Resolve from the cache only: never pip, never the network.
func (in *Installer) Lookup(reqs []string, target Target) (*Set, bool) {
	reqs, err := in.Check(reqs)
	if err != nil || target.Check() != nil {
		return nil, false
	}
	return in.cached(in.manifest(reqs, target))
}

// resolverVersion is part of every resolution's key, so that a
// resolution recorded by an older host (version 1: pip resolved the
// dependencies, and followed direct references in their metadata) is
// never served from the cache.
const resolverVersion = 2

// manifest is the file that records the resolution of a request.
func (in *Installer) manifest(reqs []string, t Target) string {
	return in.opts.State.Path(statedir.Packages, "sets", in.key(reqs, t)+".json")
}

// key names a resolution: a hash of the request, the target and the index.
func (in *Installer) key(reqs []string, t Target) string {
	b, _ := json.Marshal(struct {
		R []string
		T Target
		I string
		V int
	}{reqs, t, in.opts.Index, resolverVersion})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// cached reads a recorded resolution whose wheels are all in the cache.
func (in *Installer) cached(manifest string) (*Set, bool) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, false
	}
	var set Set
	if json.Unmarshal(data, &set) != nil || len(set.Wheels) == 0 {
		return nil, false
	}
	for _, w := range set.Wheels {
		st, err := os.Stat(in.wheelPath(in.opts.State.Path(statedir.Packages), w))
		if err != nil || st.Size() != w.Size {
			return nil, false
		}
	}
	set.Cached = true
	return &set, true
}

// wheelPath is where a wheel is cached: under its hash, with its name.
func (in *Installer) wheelPath(root string, w Wheel) string {
	return filepath.Join(root, "wheels", w.SHA256, w.File)
}

// Open reads a cached wheel, checking its hash.
func (in *Installer) Open(w Wheel) ([]byte, error) {
	data, err := os.ReadFile(in.wheelPath(in.opts.State.Path(statedir.Packages), w))
	if err != nil {
		return nil, fmt.Errorf("reading the cached wheel %s: %w", w.File, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != w.SHA256 {
		return nil, fmt.Errorf("the cached wheel %s does not match its hash; delete %s and install again", w.File, in.wheelPath(in.opts.State.Path(statedir.Packages), w))
	}
	return data, nil
}

// store moves a downloaded wheel into the cache and describes it.
func (in *Installer) store(root, file string) (Wheel, error) {
	f, err := os.Open(file)
	if err != nil {
		return Wheel{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil {
		return Wheel{}, err
	}
	w := Wheel{File: filepath.Base(file), SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}
	dst := in.wheelPath(root, w)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return Wheel{}, err
	}
	return w, os.Rename(file, dst)
}

// LastTarget is the target the sandbox last reported (remembered in the
// cache), for packages installed into every new sandbox at its start.
func (in *Installer) LastTarget() (Target, bool) {
	var t Target
	data, err := os.ReadFile(in.opts.State.Path(statedir.Packages, "target.json"))
	if err != nil || json.Unmarshal(data, &t) != nil || t.Check() != nil {
		return Target{}, false
	}
	return t, true
}

// Remember records the target the sandbox reported.
func (in *Installer) Remember(t Target) {
	if t.Check() != nil {
		return
	}
	if old, ok := in.LastTarget(); ok && slices.Equal(old.Platforms, t.Platforms) && old.Python == t.Python && slices.Equal(old.ABIs, t.ABIs) {
		return
	}
	root, err := in.opts.State.Ensure(statedir.Packages)
	if err == nil {
		err = writeJSON(filepath.Join(root, "target.json"), t)
	}
	if err != nil {
		in.opts.Log.Warn("packages: remembering the sandbox's Python", "err", err)
	}
}

// writeJSON writes v to path whole (a temporary file, then a rename).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
