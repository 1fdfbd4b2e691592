package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/statedir"
)

// wheelFiles are the file names of a set's wheels, sorted.
func wheelFiles(set *Set) []string {
	var files []string
	for _, w := range set.Wheels {
		files = append(files, w.File)
	}
	slices.Sort(files)
	return files
}

// pipRequirements are the requirements of every pip call (after "--").
func pipRequirements(calls []string) []string {
	var reqs []string
	for _, c := range calls {
		if _, after, ok := strings.Cut(c, " -- "); ok {
			reqs = append(reqs, strings.Fields(after)...)
		}
	}
	return reqs
}

// TestResolveDependencies: the host reads each wheel's dependencies and
// fetches them by name, with their extras, for the sandbox's Python: a
// dependency whose marker does not hold for it (another platform, an
// older Python, an extra not asked for) is not fetched, even when it is
// a direct reference.
func TestResolveDependencies(t *testing.T) {
	pip, calls := fakePip(t, "")
	fakePublish(t, "app", "1.0", "Lib_One[Fast] (>=1.0)", "winonly ; sys_platform == 'win32'",
		"oldpy @ file:///home/me/private/oldpy.whl ; python_version < '3.8'", `docs ; extra == "docs"`)
	fakePublish(t, "lib-one", "1.2", "base>=0.5,<2", `speedup ; extra == "FAST" and platform_machine == "x86_64"`)
	fakePublish(t, "base", "1.0")
	fakePublish(t, "speedup", "3.0", "base")
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	set, err := in.Resolve(context.Background(), []string{"app"}, target, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app-1.0-py3-none-any.whl", "base-1.0-py3-none-any.whl", "lib_one-1.2-py3-none-any.whl", "speedup-3.0-py3-none-any.whl"}
	if got := wheelFiles(set); !slices.Equal(got, want) {
		t.Fatalf("wheels %q, want %q", got, want)
	}
	reqs := pipRequirements(calls())
	for _, r := range reqs {
		if strings.ContainsAny(r, "@:/;[") {
			t.Errorf("pip was given %q", r)
		}
	}
	for _, never := range []string{"winonly", "oldpy", "docs"} {
		for _, r := range reqs {
			if strings.HasPrefix(r, never) {
				t.Errorf("pip was asked for %q, whose marker does not hold for the sandbox", r)
			}
		}
	}
	if !slices.Contains(reqs, "lib-one>=1.0") || !slices.Contains(reqs, "base<2,>=0.5") || !slices.Contains(reqs, "base==1.0") {
		t.Errorf("pip was not asked for the dependencies by name with their versions: %q", reqs)
	}
}

// TestDirectReferencesRefused: a dependency that applies to the sandbox
// and is a URL, a path or a VCS reference fails the install with an error
// naming the package and the reference, with no path in it; pip is never
// given the reference, nor the dependency's name.
func TestDirectReferencesRefused(t *testing.T) {
	for _, c := range []struct{ dep, shown string }{
		{"privpkg @ file:///home/me/private/privpkg-1.0-py3-none-any.whl", `"privpkg @ file://…"`},
		{"PrivPkg@file:///home/me/private/privpkg.whl;python_version>='3'", `"privpkg @ file://…"`},
		{"sdpkg @ http://user:secret@127.0.0.1:8080/files/sdpkg-1.0.tar.gz", `"sdpkg @ http://127.0.0.1:8080/…"`},
		{"sdpkg @ https://files.example/sdpkg-1.0.tar.gz#sha256=00", `"sdpkg @ https://files.example/…"`},
		{"gitpkg @ git+https://127.0.0.1:9/team/gitpkg.git@main", `"gitpkg @ git+https://127.0.0.1:9/…"`},
		{"gitpkg @ git+file:///home/me/repo", `"gitpkg @ git+file://…"`},
		{"localpkg @ /home/me/private/localpkg", `"localpkg @ <a path>"`},
		{"localpkg @ ./localpkg", `"localpkg @ <a path>"`},
		{"x[extra] @ file:///home/me/x.whl ; os_name == 'posix'", `"x @ file://…"`},
	} {
		pip, calls := fakePip(t, "")
		fakePublish(t, "evil", "1.0", "base", c.dep)
		fakePublish(t, "base", "1.0")
		in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
		_, err := in.Resolve(context.Background(), []string{"evil"}, target, false)
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != Refused {
			t.Errorf("%s: %v, want a refusal", c.dep, err)
			continue
		}
		if !strings.Contains(pe.Msg, "evil 1.0 on the index depends on "+c.shown) || !strings.Contains(pe.Msg, "direct reference") {
			t.Errorf("%s: %q does not name the package and %s", c.dep, pe.Msg, c.shown)
		}
		for _, leak := range []string{"/home/me", "secret", "sdpkg-1.0", "team"} {
			if strings.Contains(pe.Msg, leak) {
				t.Errorf("%s: the message shows %q: %s", c.dep, leak, pe.Msg)
			}
		}
		for _, r := range pipRequirements(calls()) {
			if !strings.HasPrefix(r, "evil") && !strings.HasPrefix(r, "base") {
				t.Errorf("%s: pip was given %q", c.dep, r)
			}
		}
	}
}

// TestBadDependenciesRefused: a dependency with a marker the host cannot
// read, or a name or version its checker refuses, fails the install when
// it could apply; one that cannot apply is left alone.
func TestBadDependenciesRefused(t *testing.T) {
	for _, c := range []struct{ dep, want string }{
		{"base ; python_version >= '3' and (", "its marker cannot be read"},
		{"base ; unknown_var == 'x'", "its marker cannot be read"},
		{"base ; os_name ~= 'posix'", "its marker cannot be read"},
		{"--index-url=http://evil/", "is not one the host accepts"},
		{"base===1.0", "is not one the host accepts"},
		{"base==1.0+local", "is not one the host accepts"},
		{"./base", "is not one the host accepts"},
		{"base (>=1.0", "is not one the host accepts"},
		{strings.Repeat("b", 2000), "is not one the host accepts"},
	} {
		pip, calls := fakePip(t, "")
		fakePublish(t, "pkg", "1.0", c.dep)
		in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
		_, err := in.Resolve(context.Background(), []string{"pkg"}, target, false)
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != Refused || !strings.Contains(pe.Msg, "pkg 1.0 on the index depends on") {
			t.Errorf("%.40s: %v, want a refusal of pkg 1.0's dependency", c.dep, err)
			continue
		}
		if c.want == "is not one the host accepts" {
			c.want = "its name or version is not one the host accepts"
			if len(c.dep) > maxDependencyLen {
				c.want = "it is longer than"
			}
		}
		if !strings.Contains(pe.Msg, c.want) {
			t.Errorf("%.40s: %q, want %q", c.dep, pe.Msg, c.want)
		}
		if reqs := pipRequirements(calls()); !slices.Equal(reqs, []string{"pkg", "pkg==1.0"}) {
			t.Errorf("%.40s: pip was asked for %q", c.dep, reqs)
		}
	}
	// Not applicable: never fetched, never refused.
	pip, _ := fakePip(t, "")
	fakePublish(t, "pkg", "1.0", "--index-url=http://evil/ ; sys_platform == 'win32'", `x @ file:///etc/passwd ; extra == "never"`)
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	if _, err := in.Resolve(context.Background(), []string{"pkg"}, target, false); err != nil {
		t.Fatalf("dependencies that do not apply failed the install: %v", err)
	}
}

// TestIndexWheelsChecked: pip's choice is refused unless it is a wheel of
// the project asked for, at an http(s) URL on the index, with a sha256
// that the downloaded file has, whose METADATA is of that project and
// version; a link of the index to a host file is never downloaded.
func TestIndexWheelsChecked(t *testing.T) {
	type setup func(t *testing.T)
	file, data := testWheel(t, "pkg", "1.0")
	for name, c := range map[string]struct {
		setup setup
		want  string
	}{
		"file link": {func(t *testing.T) {
			fakePublishFile(t, "pkg", "1.0", "file:///home/me/private/"+file, file, data)
		}, "the index links pkg to file://…, not to a wheel on an http(s) server"},
		"vcs link": {func(t *testing.T) {
			fakePublishFile(t, "pkg", "1.0", "git+https://127.0.0.1:9/pkg.git", file, data)
		}, "the index links pkg to git+https://127.0.0.1:9/…"},
		"another project": {func(t *testing.T) {
			other, otherData := testWheel(t, "other", "1.0")
			fakePublishFile(t, "pkg", "1.0", "https://index.example/"+other, other, otherData)
			must(t, os.Rename(filepath.Join(os.Getenv("INDEX"), "pkg.json"), filepath.Join(os.Getenv("INDEX"), "pkg.json.tmp")))
			b, _ := os.ReadFile(filepath.Join(os.Getenv("INDEX"), "pkg.json.tmp"))
			must(t, os.WriteFile(filepath.Join(os.Getenv("INDEX"), "pkg.json"), []byte(strings.Replace(string(b), `"name":"pkg"`, `"name":"other"`, 1)), 0o600))
		}, `the index gave a wheel of "other"`},
		"changed file": {func(t *testing.T) {
			fakePublishFile(t, "pkg", "1.0", "https://index.example/"+file, file, data)
			_, changed := testWheel(t, "pkg", "1.0", "base")
			must(t, os.WriteFile(filepath.Join(os.Getenv("INDEX"), "pkg", file), changed, 0o600))
		}, "is not the one the index listed (its sha256 differs)"},
		"an sdist": {func(t *testing.T) {
			fakePublishFile(t, "pkg", "1.0", "https://index.example/pkg-1.0.tar.gz", "pkg-1.0.tar.gz", []byte("sdist"))
		}, `pip fetched "pkg-1.0.tar.gz", which is not a wheel`},
		"a wheel of another version": {func(t *testing.T) {
			old, oldData := testWheel(t, "pkg", "0.9")
			fakePublishFile(t, "pkg", "1.0", "https://index.example/"+old, old, oldData)
		}, `pip fetched "pkg-0.9-py3-none-any.whl", which is not a wheel the host asked for`},
		"metadata of another project": {func(t *testing.T) {
			_, otherData := testWheel(t, "other", "1.0")
			fakePublishFile(t, "pkg", "1.0", "https://index.example/"+file, file, otherData)
		}, "its .dist-info directory is of another project"},
		"not a zip": {func(t *testing.T) {
			fakePublishFile(t, "pkg", "1.0", "https://index.example/"+file, file, []byte("not a zip"))
		}, "not a zip"},
		"no hash": {func(t *testing.T) {
			fakePublishFile(t, "pkg", "1.0", "https://index.example/"+file, file, data)
			b, _ := os.ReadFile(filepath.Join(os.Getenv("INDEX"), "pkg.json"))
			must(t, os.WriteFile(filepath.Join(os.Getenv("INDEX"), "pkg.json"), []byte(strings.Replace(string(b), `"sha256"`, `"md5"`, 1)), 0o600))
		}, "has no sha256"},
	} {
		t.Run(name, func(t *testing.T) {
			pip, calls := fakePip(t, "")
			c.setup(t)
			in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
			_, err := in.Resolve(context.Background(), []string{"pkg"}, target, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "/home/me") {
				t.Fatalf("the error shows a host path: %v", err)
			}
			if strings.HasSuffix(name, "link") && slices.ContainsFunc(calls(), func(c string) bool { return strings.Contains(c, "download ") }) {
				t.Fatalf("pip downloaded a link outside the index: %q", calls())
			}
		})
	}
}

// TestConflictsAndBounds: a version a dependency rules out is asked for
// again with every specifier, and fails as a conflict when none meets
// them; a dependency the index lacks names who needs it; an install of
// more than MaxDistributions packages is refused before they are
// fetched.
func TestConflictsAndBounds(t *testing.T) {
	pip, calls := fakePip(t, "")
	fakePublish(t, "plot", "3.8", "numpy<2,>=1.21")
	must(t, os.WriteFile(filepath.Join(os.Getenv("INDEX"), "numpy.refuse"), []byte("<2"), 0o600))
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	_, err := in.Resolve(context.Background(), []string{"numpy==2.0", "plot"}, target, false)
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != Conflict || !strings.Contains(pe.Msg, "numpy==2.0 (the sandbox) and numpy<2,>=1.21 (plot 3.8)") {
		t.Fatalf("a conflict: %v", err)
	}
	if reqs := pipRequirements(calls()); !slices.Contains(reqs, "numpy<2,==2.0,>=1.21") {
		t.Fatalf("numpy was not asked for again with every specifier: %q", reqs)
	}

	pip, _ = fakePip(t, "")
	fakePublish(t, "app", "1.0", "missing-dep")
	in = New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	_, err = in.Resolve(context.Background(), []string{"app"}, target, false)
	if !errors.As(err, &pe) || pe.Kind != NotFound || !strings.Contains(pe.Msg, "the index has no package missing-dep, which app 1.0 depends on") {
		t.Fatalf("a missing dependency: %v", err)
	}

	pip, calls = fakePip(t, "")
	var deps []string
	for i := range maxDistributions + 10 {
		deps = append(deps, fmt.Sprintf("dep%d", i))
	}
	fakePublish(t, "huge", "1.0", deps...)
	in = New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	_, err = in.Resolve(context.Background(), []string{"huge"}, target, false)
	if !errors.As(err, &pe) || pe.Kind != Refused || !strings.Contains(pe.Msg, fmt.Sprintf("more than %d packages", maxDistributions)) {
		t.Fatalf("too many dependencies: %v", err)
	}
	if reqs := pipRequirements(calls()); !slices.Equal(reqs, []string{"huge", "huge==1.0"}) {
		t.Fatalf("pip was asked for the dependencies of a refused install: %d requirements", len(reqs))
	}

	// A wheel whose dependencies ask for a thousand extras of itself.
	pip, _ = fakePip(t, "")
	deps = deps[:0]
	for i := range maxRequiresDist - 1 {
		deps = append(deps, fmt.Sprintf("hub[e%d] ; extra == 'e%d'", i+1, i))
	}
	fakePublish(t, "hub", "1.0", append(deps, "hub[e0]")...)
	in = New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	_, err = in.Resolve(context.Background(), []string{"hub"}, target, false)
	if !errors.As(err, &pe) || pe.Kind != Refused || !strings.Contains(pe.Msg, "too many extras and dependencies") {
		t.Fatalf("a walk without bound: %v", err)
	}
}

// TestOldCacheNotServed: a resolution recorded under an older resolver's
// key (which let pip follow the dependencies' references) is not used.
func TestOldCacheNotServed(t *testing.T) {
	in := New(Options{State: statedir.Dir(t.TempDir())})
	b, _ := json.Marshal(struct {
		R []string
		T Target
		I string
	}{[]string{"tabulate"}, target, ""})
	sum := sha256.Sum256(b)
	old := in.opts.State.Path(statedir.Packages, "sets", hex.EncodeToString(sum[:16])+".json")
	if in.manifest([]string{"tabulate"}, target) == old {
		t.Fatal("the resolver's version is not part of the cache key")
	}
}
