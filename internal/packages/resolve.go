package packages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// maxDistributions bounds the distributions of one install, its
// dependencies included.
const maxDistributions = 256

// maxRounds bounds the rounds of one resolution (each asks pip about the
// names the round before found).
const maxRounds = 32

// maxReport bounds the report pip writes for one round.
const maxReport = 64 << 20

// The host resolves dependencies itself, so that nothing pip reads in a
// package's metadata ever makes it fetch anything. Each round, pip is
// asked, for every name the round needs, with --no-deps: first which wheel
// on the index it would fetch (pip install --dry-run --report, which names
// the wheel's URL and hash), then, when that URL is an http(s) URL, to
// fetch that version (pip download). The host checks each file is that
// wheel (its name, version and hash), reads its METADATA, evaluates each
// Requires-Dist's marker for the sandbox's Python, and refuses a
// dependency that applies but is a direct reference (a URL or a path) or
// not a requirement [parseRequirement] accepts. The names found are the
// next round's, until every name has a wheel that meets every version
// asked of it. There is no backtracking: a version some dependency rules
// out is fetched again with every specifier asked of it, and when no
// version meets them all, the install fails as a conflict.

// dist is a wheel the resolution holds for a project.
type dist struct {
	name    string
	version pepVersion
	file    string // the downloaded wheel, under the resolution's directory
	deps    []dependency
}

func (d *dist) label() string { return d.name + " " + d.version.String() }

// want is what the resolution needs of one project: every version
// specifier and extra asked of it, and who asked.
type want struct {
	name   string
	specs  []string
	extras []string
	// by are who asked: "" for the sandbox, else "name version".
	by []string
	// asks are the requirements with versions, and who asked for each:
	// "numpy<2 (matplotlib 3.8.0)".
	asks []string
}

func (w *want) add(r requirement, by string) {
	for _, s := range r.Specs {
		if !slices.Contains(w.specs, s) {
			w.specs = append(w.specs, s)
		}
	}
	for _, e := range r.Extras {
		if !slices.Contains(w.extras, e) {
			w.extras = append(w.extras, e)
		}
	}
	if !slices.Contains(w.by, by) {
		w.by = append(w.by, by)
	}
	who := by
	if who == "" {
		who = "the sandbox"
	}
	if ask := fmt.Sprintf("%s%s (%s)", r.Name, strings.Join(r.Specs, ","), who); len(r.Specs) > 0 && !slices.Contains(w.asks, ask) {
		w.asks = append(w.asks, ask)
	}
}

// requirement is what pip is asked for: the name and every specifier,
// without extras (pip reads no dependencies).
func (w *want) requirement() string {
	specs := slices.Clone(w.specs)
	slices.Sort(specs)
	return requirement{Name: w.name, Specs: specs}.String()
}

// resolution is one install's resolution.
type resolution struct {
	in     *Installer
	reqs   []string // the sandbox's requirements, canonical
	dir    string   // a fresh directory for pip's files
	target Target
	env    map[string]string
	roots  []requirement
	chosen map[string]*dist
}

// resolve finds the wheels of reqs (canonical requirements) and their
// dependencies for t, downloading them under dir.
func (in *Installer) resolve(ctx context.Context, dir string, reqs []string, t Target) ([]*dist, error) {
	r := &resolution{in: in, reqs: reqs, dir: dir, target: t, env: t.markerEnv(), chosen: map[string]*dist{}}
	for _, s := range reqs {
		req, err := parseRequirement(s)
		if err != nil {
			return nil, &Error{Kind: Refused, Msg: err.Error()}
		}
		r.roots = append(r.roots, req)
	}
	for round := 0; ; round++ {
		wants, refusal, err := r.closure()
		if err != nil {
			return nil, err
		}
		if len(wants) > maxDistributions {
			return nil, &Error{Kind: Refused, Msg: fmt.Sprintf("%s need more than %d packages with their dependencies: install fewer at a time", strings.Join(reqs, " "), maxDistributions)}
		}
		var fetch []*want
		for _, w := range wants {
			if d := r.chosen[w.name]; d == nil || !d.version.Satisfies(w.specs) {
				fetch = append(fetch, w)
			}
		}
		if len(fetch) == 0 {
			if refusal != nil {
				return nil, r.refuse(refusal.d, refusal.dep, refusal.why)
			}
			out := make([]*dist, len(wants))
			for i, w := range wants {
				out[i] = r.chosen[w.name]
			}
			return out, nil
		}
		if round == maxRounds {
			return nil, &Error{Kind: Conflict, Msg: fmt.Sprintf("the dependencies of %s did not settle on one version each after %d rounds: ask for fewer or exact versions", strings.Join(reqs, " "), maxRounds)}
		}
		if err := r.fetch(ctx, round, fetch); err != nil {
			return nil, err
		}
	}
}

// maxEvaluations bounds the markers one walk of the dependencies
// evaluates (a dependency is evaluated once for each extra asked of the
// project that declares it).
const maxEvaluations = 1 << 18

// refused is a dependency that applies but that the host will not fetch.
type refused struct {
	d   *dist
	dep dependency
	why string
}

// closure walks from the sandbox's requirements through the wheels held,
// and returns every project needed, in the order found, and the first
// dependency that applies but that the host refuses.
func (r *resolution) closure() ([]*want, *refused, error) {
	type item struct {
		req requirement
		by  string
	}
	var order []*want
	wants := map[string]*want{}
	var refusal *refused
	queue := make([]item, 0, len(r.roots))
	for _, req := range r.roots {
		queue = append(queue, item{req: req})
	}
	expanded := map[string]bool{}
	evaluations := 0
	for len(queue) > 0 && len(order) <= maxDistributions {
		it := queue[0]
		queue = queue[1:]
		w := wants[it.req.Name]
		if w == nil {
			w = &want{name: it.req.Name}
			wants[w.name] = w
			order = append(order, w)
		}
		w.add(it.req, it.by)
		d := r.chosen[w.name]
		if d == nil {
			continue
		}
		for _, extra := range append([]string{""}, w.extras...) {
			if expanded[w.name+"["+extra] {
				continue
			}
			expanded[w.name+"["+extra] = true
			if evaluations += len(d.deps); evaluations > maxEvaluations {
				return nil, nil, &Error{Kind: Refused, Msg: fmt.Sprintf("the dependencies of %s ask for too many extras and dependencies to resolve (more than %d): install fewer at a time", strings.Join(r.reqs, " "), maxEvaluations)}
			}
			for _, dep := range d.deps {
				ok, err := dep.applies(r.env, []string{extra})
				switch {
				case err != nil && refusal == nil:
					refusal = &refused{d, dep, "its marker cannot be read (" + err.Error() + ")"}
				case !ok || err != nil:
				case dep.bad != "" && refusal == nil:
					refusal = &refused{d, dep, dep.bad}
				case dep.bad == "":
					queue = append(queue, item{req: dep.req, by: d.label()})
				}
			}
		}
	}
	return order, refusal, nil
}

// refuse is the error for a dependency of d the host will not fetch: it
// names the package, the dependency and (redacted) its reference. The
// host's log has the dependency as the index wrote it.
func (r *resolution) refuse(d *dist, dep dependency, why string) *Error {
	r.in.opts.Log.Warn("packages: a dependency refused", "package", d.label(), "requires_dist", dep.text, "why", why)
	what := "a dependency"
	switch {
	case dep.ref != "" && dep.name != "":
		what = fmt.Sprintf("%q", dep.name+" @ "+dep.ref)
	case dep.ref != "":
		what = fmt.Sprintf("%q", dep.ref)
	case dep.name != "":
		what = fmt.Sprintf("%q", dep.name)
	}
	if dep.ref != "" {
		return &Error{Kind: Refused, Msg: fmt.Sprintf("%s on the index depends on %s, a direct reference (a URL or a path) instead of a name on the index. The host fetches dependencies only by name from the package index, so it refused the install: ask the package's publisher for a release that names its dependencies, or install another version of %s",
			d.label(), what, d.name)}
	}
	return &Error{Kind: Refused, Msg: fmt.Sprintf("%s on the index depends on %s, which the host refused: %s. Install another version of %s", d.label(), what, why, d.name)}
}

// pick is the wheel pip would fetch for a want: its version, URL and
// hash, from pip's report.
type pick struct {
	version pepVersion
	sha256  string
}

// report is the part of pip's installation report the host reads
// (https://pip.pypa.io/en/stable/reference/installation-report/).
type report struct {
	Install []struct {
		IsDirect     bool `json:"is_direct"`
		DownloadInfo struct {
			URL         string `json:"url"`
			ArchiveInfo *struct {
				Hashes map[string]string `json:"hashes"`
			} `json:"archive_info"`
			VCSInfo json.RawMessage `json:"vcs_info"`
			DirInfo json.RawMessage `json:"dir_info"`
		} `json:"download_info"`
		Metadata struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"metadata"`
	} `json:"install"`
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// fetch asks pip which wheel of each want the index has, checks the
// answers, downloads those wheels and reads them.
func (r *resolution) fetch(ctx context.Context, round int, wants []*want) error {
	dir := filepath.Join(r.dir, fmt.Sprintf("round-%d", round))
	if err := os.MkdirAll(filepath.Join(dir, "wheels"), 0o700); err != nil {
		return err
	}
	reqs := make([]string, len(wants))
	byName := map[string]*want{}
	for i, w := range wants {
		reqs[i], byName[w.name] = w.requirement(), w
	}
	picks, err := r.ask(ctx, dir, reqs, byName)
	if err != nil {
		return err
	}
	pins := make([]string, 0, len(wants))
	for _, w := range wants {
		pins = append(pins, w.name+"=="+picks[w.name].version.Public())
	}
	if err := r.pip(ctx, byName, pins, "download", "--only-binary=:all:", "--no-deps", "--progress-bar=off",
		"--dest", filepath.Join(dir, "wheels")); err != nil {
		return err
	}
	return r.take(filepath.Join(dir, "wheels"), picks)
}

// ask is pip's choice of a wheel for each requirement (pip install
// --dry-run --no-deps --report): an http(s) URL on the index with a
// sha256, of the project asked for, with a version [parseRequirement]
// accepts in a pin.
func (r *resolution) ask(ctx context.Context, dir string, reqs []string, byName map[string]*want) (map[string]pick, error) {
	path := filepath.Join(dir, "report.json")
	if err := r.pip(ctx, byName, reqs, "install", "--dry-run", "--ignore-installed", "--no-deps", "--only-binary=:all:",
		"--progress-bar=off", "--target", filepath.Join(dir, "target"), "--report", path); err != nil {
		return nil, err
	}
	var rep report
	if err := readJSON(path, maxReport, &rep); err != nil {
		return nil, fmt.Errorf("reading pip's report for %s: %w", strings.Join(reqs, " "), err)
	}
	picks := map[string]pick{}
	for _, it := range rep.Install {
		name := normalize(it.Metadata.Name)
		if _, dup := picks[name]; byName[name] == nil || dup {
			return nil, &Error{Kind: Refused, Msg: fmt.Sprintf("asked for %s, the index gave a wheel of %q: the host takes only the projects it asks for", strings.Join(reqs, " "), clip(it.Metadata.Name, 60))}
		}
		u, err := url.Parse(it.DownloadInfo.URL)
		if it.IsDirect || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(it.DownloadInfo.VCSInfo) > 0 || len(it.DownloadInfo.DirInfo) > 0 {
			r.in.opts.Log.Warn("packages: the index links a wheel outside itself", "project", name, "url", it.DownloadInfo.URL)
			return nil, &Error{Kind: Refused, Msg: fmt.Sprintf("the index links %s to %s, not to a wheel on an http(s) server: the host fetches only the index's own wheels, so it refused %s", name, redactReference(it.DownloadInfo.URL), name)}
		}
		var sum string
		if it.DownloadInfo.ArchiveInfo != nil {
			sum = strings.ToLower(it.DownloadInfo.ArchiveInfo.Hashes["sha256"])
		}
		v, err := parseVersion(it.Metadata.Version)
		if !sha256Hex.MatchString(sum) || err != nil || !publicVersion.MatchString(v.Public()) {
			return nil, &Error{Kind: Refused, Msg: fmt.Sprintf("the index's wheel of %s has no sha256 or no public PEP 440 version (%q): the host fetches only wheels it can pin", name, clip(it.Metadata.Version, 40))}
		}
		if !v.Satisfies(byName[name].specs) {
			return nil, &Error{Kind: Failed, Msg: fmt.Sprintf("pip chose %s %s, which is not %s: the host refused it", name, v, byName[name].requirement())}
		}
		picks[name] = pick{version: v, sha256: sum}
	}
	for name := range byName {
		if _, ok := picks[name]; !ok {
			return nil, &Error{Kind: Failed, Msg: fmt.Sprintf("pip named no wheel of %s for the sandbox (%s); the host's log says why", name, r.target)}
		}
	}
	return picks, nil
}

// pip runs pip's command (args: the command and its options) for reqs
// on the target, with the target's tags and the index's options. Its
// failure is explained to the sandbox from wants, the requirements of
// this round by name.
func (r *resolution) pip(ctx context.Context, wants map[string]*want, reqs []string, args ...string) error {
	args = append(args, "--python-version", r.target.Python, "--implementation", r.target.Implementation)
	for _, abi := range r.target.ABIs {
		args = append(args, "--abi", abi)
	}
	for _, p := range r.target.Platforms {
		args = append(args, "--platform", p)
	}
	args = append(args, r.in.indexArgs(ctx)...)
	args = append(append(args, "--"), reqs...)
	var stderr bytes.Buffer
	if _, err := r.in.runPip(ctx, false, &stderr, args...); err != nil {
		if ctx.Err() != nil {
			return &Error{Kind: Stopped, Msg: fmt.Sprintf("the install was stopped before pip finished (%v): give the cell a longer timeout, such as run_python's timeout=120", ctx.Err())}
		}
		r.in.opts.Log.Warn("packages: pip failed", "command", args[0], "requirements", reqs, "err", err, "pip", pipErrors(stderr.String()))
		return r.in.explain(ctx, r.reqs, r.target, stderr.String(), wants)
	}
	return nil
}

// take checks that the files pip downloaded are exactly the wheels
// picked, and reads their metadata.
func (r *resolution) take(dir string, picks map[string]pick) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	got := map[string]bool{}
	for _, e := range entries {
		name, version, err := parseWheelFile(e.Name())
		p, picked := picks[name]
		switch {
		case err != nil || !e.Type().IsRegular():
			return &Error{Kind: Refused, Msg: fmt.Sprintf("pip fetched %q, which is not a wheel: the host installs wheels only", clip(e.Name(), 80))}
		case !picked || got[name] || version.Compare(p.version) != 0:
			return &Error{Kind: Refused, Msg: fmt.Sprintf("pip fetched %q, which is not a wheel the host asked for", clip(e.Name(), 80))}
		}
		got[name] = true
		path := filepath.Join(dir, e.Name())
		if sum, serr := fileSHA256(path); serr != nil || sum != p.sha256 {
			return &Error{Kind: Refused, Msg: fmt.Sprintf("the wheel %s pip fetched is not the one the index listed (its sha256 differs): the host refused it", clip(e.Name(), 80))}
		}
		d, err := readDist(path, name, p.version)
		if err != nil {
			return &Error{Kind: Refused, Msg: fmt.Sprintf("the wheel %s from the index cannot be installed: %v", clip(e.Name(), 80), err)}
		}
		r.chosen[name] = d
	}
	for name := range picks {
		if !got[name] {
			return &Error{Kind: Failed, Msg: fmt.Sprintf("pip downloaded no wheel of %s for the sandbox (%s); the host's log says why", name, r.target)}
		}
	}
	return nil
}

// readDist reads a downloaded wheel's METADATA and checks it is of the
// project and version its file name says.
func readDist(path, name string, version pepVersion) (*dist, error) {
	md, err := readWheelMetadata(path, name)
	if err != nil {
		return nil, err
	}
	v, verr := parseVersion(md.Version)
	if normalize(md.Name) != name || verr != nil || v.Compare(version) != 0 {
		return nil, fmt.Errorf("its METADATA says it is %q %q, not %s %s", clip(md.Name, 60), clip(md.Version, 40), name, version)
	}
	d := &dist{name: name, version: version, file: path}
	for _, line := range md.RequiresDist {
		d.deps = append(d.deps, parseDependency(line))
	}
	return d, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readJSON decodes the JSON file at path, of at most limit bytes.
func readJSON(path string, limit int64, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("it is larger than %d bytes", limit)
	}
	return json.Unmarshal(data, v)
}
