package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// hostileBackend is an in-tree PEP 517 build backend that needs nothing
// installed: any build of an archive holding it runs its first line on
// the build's machine. %q is the marker file it writes there.
const hostileBackend = `open(%q, "w").write("built on the host")
def get_requires_for_build_wheel(config_settings=None):
    return []
`

const hostilePyproject = `[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]
`

// privateSecret is what a private wheel lying on the host holds.
const privateSecret = "host-private-wheel-7c1e"

// TestInstallNeverReadsHostFiles: the sandbox names, as packages, archives
// that lie in the bridge's working directory (a project directory, which a
// filesystem upstream lets the sandbox write): an sdist whose build backend
// would write a marker on the host (written by the sandbox through the
// filesystem server, and by the test), a private wheel, a source
// directory, and the same as paths, URLs and pip options. Nothing is built
// on the host, nothing of the host reaches the sandbox, and every answer
// is the same whether the files exist or not, with no host path and no
// traceback in it. The package index is an empty one on loopback.
func TestInstallNeverReadsHostFiles(t *testing.T) {
	needPip(t)
	project, markerDir := t.TempDir(), t.TempDir()
	marker := filepath.Join(markerDir, "built")
	t.Chdir(project) // the bridge's working directory

	var mu sync.Mutex
	var asked []string
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer index.Close()

	h := home(t, map[string]map[string]server{"fs.json": {"fs": npmServer("mcp-server-filesystem", project)}})
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{}, "package_index": index.URL + "/simple/"})
	if err := os.WriteFile(filepath.Join(h, "MCPs", "packages.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, h)

	sdist := filepath.Join(project, "evilpkg-1.0.tar.gz")
	reqs := []string{
		"x-1.0.tar", "evilpkg-1.0.tar.gz", "privpkg-1.0-py3-none-any.whl", "x==1.0+foo.tar", "evilpkg",
		"./evilpkg-1.0.tar.gz", sdist, "evilpkg/", "./evilpkg", "privpkg-1.0-py3-none-any.whl ",
		"evilpkg @ file://" + sdist, "file://" + sdist, "git+https://127.0.0.1:9/evilpkg.git",
		"--index-url=http://127.0.0.1:9/", "--find-links=.", "-e.", "x===1.0.tar",
	}
	before := installAll(t, b, reqs)

	// The files appear: the sandbox writes an sdist through the filesystem
	// server (an uncompressed tar is text the server writes unchanged),
	// and the test puts a gzipped sdist, a private wheel and a source
	// directory there, as any upstream that writes files could.
	backend := fmt.Sprintf(hostileBackend, marker)
	b.ok(fmt.Sprintf(`
import io, tarfile
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for name, text in (("x-1.0/pyproject.toml", %q), ("x-1.0/backend.py", %q)):
        data = text.encode()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
raw = buf.getvalue().decode("ascii")
for name in ("x-1.0.tar", "x==1.0+foo.tar"):
    await mcp_fs.write_file(path=%q + "/" + name, content=raw)
print("written")
`, hostilePyproject, backend, project), "timeout", 60)
	writeSdist(t, sdist, backend)
	writePrivateWheel(t, filepath.Join(project, "privpkg-1.0-py3-none-any.whl"))
	if err := os.MkdirAll(filepath.Join(project, "evilpkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(project, "evilpkg", "pyproject.toml"), []byte(hostilePyproject), 0o644))
	must(t, os.WriteFile(filepath.Join(project, "evilpkg", "backend.py"), []byte(backend), 0o644))
	for _, f := range []string{"x-1.0.tar", "x==1.0+foo.tar", "evilpkg-1.0.tar.gz", "privpkg-1.0-py3-none-any.whl"} {
		if _, err := os.Stat(filepath.Join(project, f)); err != nil {
			t.Fatalf("the archive is not in place: %v", err)
		}
	}

	after := installAll(t, b, reqs)
	if data, err := os.ReadFile(marker); err == nil {
		t.Errorf("an install built a package on the host (%q): the marker %s exists", data, marker)
	}
	for i, req := range reqs {
		got := after[i]
		t.Logf("install(%q): %s", req, got.Error)
		if got.OK {
			t.Errorf("install(%q) succeeded: %s", req, got.Result)
			continue
		}
		if got.Error != before[i].Error {
			t.Errorf("install(%q) answers differently once a host file exists:\nbefore: %s\nafter:  %s", req, before[i].Error, got.Error)
		}
		for _, leak := range []string{project, h, markerDir, "Traceback", "pip says", "site-packages"} {
			if strings.Contains(got.Error, leak) && !strings.Contains(req, leak) {
				t.Errorf("install(%q)'s error shows %q: %s", req, leak, got.Error)
			}
		}
		if !strings.Contains(got.Error, "is not a package name") && !strings.Contains(got.Error, "the index has no package") {
			t.Errorf("install(%q) does not say what was wrong with the request: %s", req, got.Error)
		}
	}
	out := b.run("import privpkg; print(privpkg.SECRET)")
	if !out.isError || strings.Contains(out.text, privateSecret) {
		t.Fatalf("the host's private wheel reached the sandbox:\n%s", out.text)
	}
	mu.Lock()
	defer mu.Unlock()
	name := regexp.MustCompile(`^/simple/[a-z0-9]+(-[a-z0-9]+)*/$`)
	for _, p := range asked {
		if !name.MatchString(p) {
			t.Errorf("pip asked the index for %q, not a normalized package name", p)
		}
	}
}

// installResult is what one runtime.install answered in the sandbox.
type installResult struct {
	OK     bool   `json:"ok"`
	Result any    `json:"result"`
	Error  string `json:"error"`
}

// installAll asks the sandbox to install each request alone and returns
// what each answered.
func installAll(t *testing.T, b *bridge, reqs []string) []installResult {
	t.Helper()
	list, _ := json.Marshal(reqs)
	text := b.ok(fmt.Sprintf(`
import json
out = []
for req in json.loads(%q):
    try:
        out.append({"ok": True, "result": await runtime.install(req)})
    except Exception as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
print("RESULTS", json.dumps(out))
`, list), "timeout", 170)
	i := strings.Index(text, "RESULTS ")
	var got []installResult
	if i < 0 || json.Unmarshal([]byte(strings.SplitN(text[i+len("RESULTS "):], "\n", 2)[0]), &got) != nil || len(got) != len(reqs) {
		t.Fatalf("no results in:\n%s", text)
	}
	return got
}

// writeSdist writes a gzipped sdist whose build backend is backend.
func writeSdist(t *testing.T, path, backend string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, text := range map[string]string{"evilpkg-1.0/pyproject.toml": hostilePyproject, "evilpkg-1.0/backend.py": backend} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writePrivateWheel writes a wheel for any Python whose module holds
// privateSecret.
func writePrivateWheel(t *testing.T, path string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range [][2]string{
		{"privpkg/__init__.py", fmt.Sprintf("SECRET = %q\n", privateSecret)},
		{"privpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: privpkg\nVersion: 1.0\n"},
		{"privpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"privpkg-1.0.dist-info/RECORD", ""},
	} {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
