package packages

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/statedir"
)

var target = Target{Python: "3.11", Implementation: "cp", ABIs: []string{"cp311"}, Platforms: []string{"manylinux_2_36_x86_64", "manylinux2014_x86_64"}}

// fakePip writes a pip stand-in that serves the wheels of a fake index
// (fakePublish; tabulate 1.0 and numpy 2.0 are there): "--version"
// answers, "config list" prints $CONFIG, "install --dry-run --report"
// writes a report of the wheel of each requirement (or fails as pip does
// when the index has none, or when the requirement has the text of the
// project's .refuse file), "download" copies the wheels into --dest,
// "index" fails unless the name is "sourceonly" or on the index; every call's arguments
// are appended to a log, and its working directory, the files there and
// some of its environment to another. With fail set, install and
// download print it on stderr and exit 1.
func fakePip(t *testing.T, fail string) (cmd []string, calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	t.Setenv("INDEX", filepath.Join(dir, "index"))
	script := `#!/bin/sh
echo "$*" >> ` + log + `
echo "cwd=$(pwd) files=[$(ls -A)] config=$PIP_CONFIG_FILE findlinks=$PIP_FIND_LINKS pythonpath=$PYTHONPATH safepath=$PYTHONSAFEPATH" >> ` + log + `.env
while [ "${1#--}" != "$1" ]; do
  [ "$1" = --version ] && { echo "pip 99.0 from /fake (python 3.11)"; exit 0; }
  shift
done
case "$1" in
config) printf '%b' "$CONFIG"; exit 0;;
index) [ "$3" = sourceonly ] || [ -f "$INDEX/$3.json" ]; exit $?;;
esac
if [ -n "$FAIL" ]; then printf '%b' "$FAIL" >&2; exit 1; fi
cmd="$1"; dest=""; report=""; after=""; items=""
while [ $# -gt 0 ]; do
  case "$1" in
  --dest) dest="$2"; shift;;
  --report) report="$2"; shift;;
  --) after=1;;
  *) if [ -n "$after" ]; then
       name=$(echo "$1" | sed 's/[][<>=!~,].*//')
       if [ ! -f "$INDEX/$name.json" ] || { [ -f "$INDEX/$name.refuse" ] && [ "${1#*$(cat "$INDEX/$name.refuse")}" != "$1" ]; }; then
         echo "ERROR: Could not find a version that satisfies the requirement $1 (from versions: none)" >&2
         echo "ERROR: No matching distribution found for $1" >&2
         exit 1
       fi
       [ -n "$items" ] && items="$items,"
       items="$items$(cat "$INDEX/$name.json")"
       [ "$cmd" = download ] && cp "$INDEX/$name/"* "$dest/"
     fi;;
  esac
  shift
done
[ "$cmd" = install ] && printf '{"version": "1", "install": [%s]}' "$items" > "$report"
exit 0
`
	path := filepath.Join(dir, "pip")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAIL", fail)
	fakePublish(t, "tabulate", "1.0")
	fakePublish(t, "numpy", "2.0")
	return []string{path}, func() []string {
		data, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

// testWheel is a wheel of a module named after the project, whose
// METADATA declares requires.
func testWheel(t *testing.T, name, version string, requires ...string) (string, []byte) {
	t.Helper()
	info := strings.ReplaceAll(name, "-", "_") + "-" + version
	meta := "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
	for _, r := range requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range [][2]string{
		{strings.ReplaceAll(name, "-", "_") + "/__init__.py", "X = 1\n"},
		{info + ".dist-info/METADATA", meta + "\nThe description.\n"},
		{info + ".dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{info + ".dist-info/RECORD", ""},
	} {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return info + "-py3-none-any.whl", buf.Bytes()
}

// fakePublish puts a wheel on fakePip's index, at an https URL.
func fakePublish(t *testing.T, name, version string, requires ...string) {
	t.Helper()
	file, data := testWheel(t, name, version, requires...)
	fakePublishFile(t, name, version, "https://index.example/files/"+file, file, data)
}

// fakePublishFile puts a file on fakePip's index under a project, as pip
// would report it: at url, with its sha256, of the given version.
func fakePublishFile(t *testing.T, project, version, url, file string, data []byte) {
	t.Helper()
	index := os.Getenv("INDEX")
	if err := os.MkdirAll(filepath.Join(index, project), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(index, project, file), data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	item, _ := json.Marshal(map[string]any{
		"is_direct":     false,
		"download_info": map[string]any{"url": url, "archive_info": map[string]any{"hashes": map[string]string{"sha256": hex.EncodeToString(sum[:])}}},
		"metadata":      map[string]any{"name": project, "version": version, "summary": "x"},
	})
	if err := os.WriteFile(filepath.Join(index, project+".json"), item, 0o600); err != nil {
		t.Fatal(err)
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
	c := calls()
	mustHaveArgs(t, c[len(c)-2], "--isolated --no-input --disable-pip-version-check install --dry-run --ignore-installed --no-deps --only-binary=:all: ",
		" --report ", "--python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_36_x86_64 --platform manylinux2014_x86_64 -- numpy>=2 tabulate")
	mustHaveArgs(t, c[len(c)-1], "--isolated --no-input --disable-pip-version-check download --only-binary=:all: --no-deps ",
		"--python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_36_x86_64 --platform manylinux2014_x86_64 -- numpy==2.0 tabulate==1.0")
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
		if data, err := in.Open(w); err != nil || !strings.HasPrefix(string(data), "PK") {
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

// mustHaveArgs fails the test unless each of wants is in pip's call.
func mustHaveArgs(t *testing.T, call string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(call, want) {
			t.Fatalf("pip was called as %q, want %q in it", call, want)
		}
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
		{[]string{"-r/etc/passwd"}, "is not a package name"},
		{[]string{"--index-url=http://evil/"}, "is not a package name"},
		{[]string{"pandas @ https://example.invalid/p.whl"}, "is not a package name"},
		{[]string{"./pandas"}, "is not a package name"},
		{[]string{"pandas; os_name == 'nt'"}, "is not a package name"},
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
	if New(Options{Allow: []string{}}).opts.Allow == nil || allowed("x", []string{}) {
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
			"the versions asked for (a) conflict with each other or with their dependencies"},
		{"b", "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(\"Failed to establish a new connection: [Errno 111] Connection refused\")'\nERROR: No matching distribution found for b\n",
			"the host could not reach the package index"},
		{"c", "ERROR: Exception:\nTraceback (most recent call last):\n  File \"/home/me/.local/lib/python3.11/site-packages/pip/_internal/cli/base_command.py\", line 180\nOSError: /home/me/project/c: private\n",
			"pip could not fetch c for the sandbox (CPython 3.11 on manylinux_2_36_x86_64); the host's log says why"},
	} {
		pip, _ := fakePip(t, c.stderr)
		var log bytes.Buffer
		in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip, Log: slog.New(slog.NewTextHandler(&log, nil))})
		_, err := in.Resolve(context.Background(), []string{c.req}, target, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.req, err, c.want)
		}
		if strings.Contains(err.Error(), "/home/me") || strings.Contains(err.Error(), "Traceback") || strings.Contains(err.Error(), "ERROR:") {
			t.Errorf("%s: pip's words reached the message: %v", c.req, err)
		}
		if !strings.Contains(log.String(), "pip failed") || !strings.Contains(log.String(), "ERROR:") {
			t.Errorf("%s: pip's words are not in the host's log:\n%s", c.req, log.String())
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

// TestPipIsolated: pip runs in an empty directory of its own, reads no
// pip configuration file and no PIP_* or PYTHONPATH variable, and gets
// only the index and network settings of the user's configuration (or
// the package_index setting's index).
func TestPipIsolated(t *testing.T) {
	pip, calls := fakePip(t, "")
	t.Setenv("PIP_FIND_LINKS", "/opt/wheels")
	t.Setenv("PYTHONPATH", "/evil")
	t.Setenv("CONFIG", "global.index-url='https://global.example/simple'\n:env:.find-links='/opt/wheels'\n"+
		"global.cert='/etc/ssl/ca.pem'\n:env:.index-url='https://env.example/simple'\ndownload.trusted-host='a.example b.example'\n"+
		"install.proxy='http://install-only:3128'\nglobal.client-cert='/x/\\'quoted'\n")
	cwd, _ := os.Getwd()
	must(t, os.WriteFile("tabulate", []byte("a file named like the request"), 0o600))
	defer os.Remove("tabulate")
	in := New(Options{State: statedir.Dir(t.TempDir()), Pip: pip})
	if _, err := in.Resolve(context.Background(), []string{"tabulate"}, target, false); err != nil {
		t.Fatal(err)
	}
	c := calls()
	download := c[len(c)-1]
	for _, want := range []string{"--isolated ", "--index-url=https://env.example/simple ", "--cert=/etc/ssl/ca.pem ", "--trusted-host=a.example --trusted-host=b.example "} {
		if !strings.Contains(download, want) {
			t.Errorf("pip download %q: no %q", download, want)
		}
	}
	for _, bad := range []string{"find-links", "global.example", "install-only", "client-cert"} {
		if strings.Contains(download, bad) {
			t.Errorf("pip download %q has %q", download, bad)
		}
	}
	envs, _ := os.ReadFile(pip[0][:len(pip[0])-len("pip")] + "calls.env")
	lines := strings.Split(strings.TrimSpace(string(envs)), "\n")
	for _, l := range lines {
		if strings.Contains(l, "cwd="+cwd+" ") || !strings.Contains(l, "files=[]") || !strings.Contains(l, "safepath=1") {
			t.Errorf("pip ran outside an empty directory of its own: %s", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "config=/dev/null findlinks= pythonpath= ") {
		t.Errorf("pip download saw the user's settings: %s", last)
	}

	// The package_index setting replaces the index, not the network settings.
	pip, calls = fakePip(t, "")
	in = New(Options{State: statedir.Dir(t.TempDir()), Pip: pip, Index: "http://127.0.0.1:9/simple"})
	if _, err := in.Resolve(context.Background(), []string{"tabulate"}, target, false); err != nil {
		t.Fatal(err)
	}
	c = calls()
	if d := c[len(c)-1]; !strings.Contains(d, "--index-url=http://127.0.0.1:9/simple ") || !strings.Contains(d, "--cert=/etc/ssl/ca.pem ") || strings.Contains(d, "example/simple") {
		t.Errorf("pip download with package_index: %q", d)
	}
}

// TestParseRequirement: names, extras and versions come out canonical;
// paths, archives, URLs, markers, options and local or arbitrary
// versions are refused; no canonical form is a path or an archive's name.
func TestParseRequirement(t *testing.T) {
	for in, want := range map[string]string{
		" Pandas [ Excel , xlsx,excel ] >= 2 , < 3 ": "pandas[excel,xlsx]>=2,<3",
		"x-1.0.tar":                    "x-1-0-tar",
		"evilpkg-1.0.tar.gz":           "evilpkg-1-0-tar-gz",
		"privpkg-1.0-py3-none-any.whl": "privpkg-1-0-py3-none-any-whl",
		"Scikit__Learn~=1.5":           "scikit-learn~=1.5",
		"numpy==2.*":                   "numpy==2.*",
		"torch!=2.1.0rc1":              "torch!=2.1.0rc1",
		"a==1!2.0.post1.dev3":          "a==1!2.0.post1.dev3",
	} {
		r, err := parseRequirement(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRequirement(%q) = %q, %v; want %q", in, r.String(), err, want)
		}
	}
	for _, bad := range []string{"", "./evilpkg-1.0.tar.gz", "/tmp/x.whl", "evilpkg/", ".", "..", "-e.", "--find-links=.",
		"x==1.0+foo.tar", "x===1.0.tar", "x>=2.*", "x==1.0.tar", "x @ file:///tmp/x.tar", "file:///tmp/x.tar",
		"git+https://example.invalid/x.git", "x; os_name=='nt'", "x[", "x[a/b]", "C:\\x.whl", "x y", "x\n--index-url=y",
		strings.Repeat("a", 201)} {
		if r, err := parseRequirement(bad); err == nil || !strings.Contains(err.Error(), "is not a package name") {
			t.Errorf("ParseRequirement(%q) = %q, %v: want a refusal", bad, r.String(), err)
		}
	}
}

// must fails the test at once when a step of its set-up returned an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
