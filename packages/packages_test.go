package packages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/statedir"
)

var target = Target{Python: "3.11", Implementation: "cp", ABIs: []string{"cp311"}, Platforms: []string{"manylinux_2_36_x86_64", "manylinux2014_x86_64"}}

// fakePip writes a pip stand-in: "--version" answers, "download" writes
// one wheel per requirement into --dest, "index" fails unless the name is
// "sourceonly"; every call is appended to a log. With fail set, download
// prints it on stderr and exits 1.
func fakePip(t *testing.T, fail string) (cmd []string, calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case "$1" in
--version) echo "pip 99.0 from /fake (python 3.11)"; exit 0;;
index) [ "$3" = sourceonly ]; exit $?;;
esac
if [ -n "$FAIL" ]; then printf '%b' "$FAIL" >&2; exit 1; fi
dest=""; after=""
while [ $# -gt 0 ]; do
  case "$1" in
  --dest) dest="$2"; shift;;
  --) after=1;;
  *) [ -n "$after" ] && echo "wheel of $1" > "$dest/$(echo "$1" | tr -c 'a-z0-9\n' _)-1.0-py3-none-any.whl";;
  esac
  shift
done
`
	path := filepath.Join(dir, "pip")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAIL", fail)
	return []string{path}, func() []string {
		data, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

func TestResolveCachesByRequest(t *testing.T) {
	pip, calls := fakePip(t, "")
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	set, err := in.Resolve(context.Background(), []string{"tabulate", "numpy>=2"}, target, false)
	if err != nil {
		t.Fatal(err)
	}
	if set.Cached || len(set.Wheels) != 2 || set.Downloaded == 0 {
		t.Fatalf("first resolution: %+v", set)
	}
	download := calls()[len(calls())-1]
	for _, want := range []string{"download --only-binary=:all:", "--python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_36_x86_64 --platform manylinux2014_x86_64 -- numpy>=2 tabulate"} {
		if !strings.Contains(download, want) {
			t.Fatalf("pip was called as %q, want %q in it", download, want)
		}
	}
	n := len(calls())
	// The same request, written differently: the cache answers, pip is not run.
	again, err := in.Resolve(context.Background(), []string{" numpy >= 2", "tabulate", "tabulate"}, target, false)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Downloaded != 0 || len(again.Wheels) != 2 || len(calls()) != n {
		t.Fatalf("second resolution: %+v, pip calls %d -> %d", again, n, len(calls()))
	}
	for _, w := range again.Wheels {
		if data, err := in.Open(w); err != nil || !strings.HasPrefix(string(data), "wheel of ") {
			t.Fatalf("open %s: %q %v", w.File, data, err)
		}
	}
	if _, ok := in.Lookup([]string{"tabulate", "numpy>=2"}, target); !ok {
		t.Fatal("Lookup misses what Resolve cached")
	}
	// Another target is another key; upgrade runs pip again.
	other := target
	other.Python = "3.12"
	if _, ok := in.Lookup([]string{"tabulate", "numpy>=2"}, other); ok {
		t.Fatal("Lookup found wheels for another Python")
	}
	if set, err := in.Resolve(context.Background(), []string{"tabulate", "numpy>=2"}, target, true); err != nil || set.Cached || len(calls()) == n {
		t.Fatalf("upgrade did not run pip: %+v %v", set, err)
	}
}

func TestChangedWheelRefused(t *testing.T) {
	pip, _ := fakePip(t, "")
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	set, err := in.Resolve(context.Background(), []string{"tabulate"}, target, false)
	if err != nil {
		t.Fatal(err)
	}
	path := in.wheelPath(in.opts.State.Path(statedir.Packages), set.Wheels[0])
	if err := os.WriteFile(path, []byte("wheel of tampered!"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Open(set.Wheels[0]); err == nil || !strings.Contains(err.Error(), "does not match its hash") {
		t.Fatalf("a changed wheel was read: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	pip, calls := fakePip(t, "")
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip, Allow: []string{"pandas", "numpy*", "scikit_learn"}})
	for _, c := range []struct {
		reqs []string
		want string
	}{
		{nil, "name at least one package"},
		{[]string{"requests"}, `"requests" is not allowed here`},
		{[]string{"-r/etc/passwd"}, "is not a requirement the host accepts"},
		{[]string{"--index-url=http://evil/"}, "is not a requirement the host accepts"},
		{[]string{"pandas @ https://example.invalid/p.whl"}, "is not a requirement the host accepts"},
		{[]string{"./pandas"}, "is not a requirement the host accepts"},
		{[]string{"pandas; os_name == 'nt'"}, "is not a requirement the host accepts"},
	} {
		_, err := in.Resolve(context.Background(), c.reqs, target, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%q): %v, want %q", c.reqs, err, c.want)
		}
	}
	for _, ok := range []string{"Pandas[excel]>=2,<3", "numpy-financial==1.0", "scikit-learn~=1.5", "NumPy"} {
		if _, err := in.Check([]string{ok}); err != nil {
			t.Errorf("Check(%q): %v", ok, err)
		}
	}
	bad := target
	bad.Platforms = []string{"manylinux; rm -rf /"}
	if _, err := in.Resolve(context.Background(), []string{"pandas"}, bad, false); err == nil || !strings.Contains(err.Error(), "not a wheel tag") {
		t.Errorf("a hostile platform tag: %v", err)
	}
	if c := calls(); len(c) != 1 || c[0] != "" {
		t.Fatalf("pip ran for refused requests: %q", c)
	}
	if New(Options{Allow: []string{}}).opts.Allow == nil || Allowed("x", []string{}) {
		t.Fatal("an empty allow-list must allow nothing")
	}
}

func TestPipFailuresExplained(t *testing.T) {
	for _, c := range []struct{ req, stderr, want string }{
		{"nosuch", "ERROR: Could not find a version that satisfies the requirement nosuch (from versions: none)\nERROR: No matching distribution found for nosuch\n",
			"the index has no package nosuch"},
		{"sourceonly", "ERROR: Could not find a version that satisfies the requirement sourceonly (from versions: none)\nERROR: No matching distribution found for sourceonly\n",
			"sourceonly has no wheel for the sandbox's Python (CPython 3.11 on manylinux_2_36_x86_64)"},
		{"a", "Collecting a\nERROR: Cannot install a and b because these package versions have conflicting dependencies.\n\nThe conflict is caused by:\n    a 1 depends on c<2\n",
			"pip says:\nERROR: Cannot install a and b because these package versions have conflicting dependencies.\nThe conflict is caused by:\n    a 1 depends on c<2"},
	} {
		pip, _ := fakePip(t, c.stderr)
		in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
		_, err := in.Resolve(context.Background(), []string{c.req}, target, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.req, err, c.want)
		}
	}
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: []string{"/nonexistent/python3", "-m", "pip"}})
	_, err := in.Resolve(context.Background(), []string{"numpy"}, target, false)
	if err == nil || !strings.Contains(err.Error(), "apt install python3-pip") {
		t.Fatalf("no pip: %v", err)
	}
}

func TestLastTarget(t *testing.T) {
	in := New(Options{State: statedir.Dir(t.TempDir())})
	if _, ok := in.LastTarget(); ok {
		t.Fatal("a target before any was reported")
	}
	in.Remember(target)
	if got, ok := in.LastTarget(); !ok || got.Python != "3.11" || got.Platforms[1] != "manylinux2014_x86_64" {
		t.Fatalf("LastTarget: %+v %v", got, ok)
	}
}
