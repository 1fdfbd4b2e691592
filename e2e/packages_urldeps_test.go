package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// urlIndex is a PEP 503 package index on loopback, as a team's private
// index (devpi, Artifactory, a mirror) that anyone may publish to: a
// project page lists links, /files/ serves what they point at, and every
// request is recorded.
type urlIndex struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte   // /files/NAME -> content
	pages map[string][]string // project -> hrefs on its page
	asked []string
}

func newURLIndex(t *testing.T) *urlIndex {
	ix := &urlIndex{files: map[string][]byte{}, pages: map[string][]string{}}
	ix.srv = httptest.NewServer(http.HandlerFunc(ix.serve))
	t.Cleanup(ix.srv.Close)
	return ix
}

func (ix *urlIndex) serve(w http.ResponseWriter, r *http.Request) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.asked = append(ix.asked, r.URL.Path)
	if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
		if data, ok := ix.files[name]; ok {
			_, _ = w.Write(data) // a failed write is pip's to report
			return
		}
	}
	if project, ok := strings.CutPrefix(r.URL.Path, "/simple/"); ok {
		if hrefs, ok := ix.pages[strings.TrimSuffix(project, "/")]; ok {
			var b strings.Builder
			b.WriteString("<!DOCTYPE html><html><body>\n")
			for _, h := range hrefs {
				fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", html.EscapeString(h), html.EscapeString(filepath.Base(h)))
			}
			b.WriteString("</body></html>\n")
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(b.String())) // a failed write is pip's to report
			return
		}
	}
	http.NotFound(w, r)
}

// publish puts a file on the index under /files/ and, for a project,
// links it from the project's page (with its sha256, as indexes do).
func (ix *urlIndex) publish(project, file string, data []byte) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.files[file] = data
	if project != "" {
		project = strings.ReplaceAll(strings.ToLower(project), "_", "-")
		sum := sha256.Sum256(data)
		ix.pages[project] = append(ix.pages[project], "/files/"+file+"#sha256="+hex.EncodeToString(sum[:]))
	}
}

// requested is every path the index was asked for.
func (ix *urlIndex) requested() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return slices.Clone(ix.asked)
}

// buildWheel is a pure-Python wheel of a module named after the project,
// holding body, whose METADATA declares requires: a zip with the module,
// METADATA, WHEEL and RECORD, as a build backend makes it.
func buildWheel(t *testing.T, name, version, body string, requires ...string) (string, []byte) {
	t.Helper()
	info := name + "-" + version + ".dist-info"
	meta := "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
	for _, r := range requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files := [][2]string{
		{name + "/__init__.py", body},
		{info + "/METADATA", meta + "\nA package of the e2e tests.\n"},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(info + "/RECORD,,\n")
	w, err := zw.Create(info + "/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// TestInstallRefusesURLDependencies: whoever can publish to the team's
// index publishes wheels whose dependencies are direct references: a
// private wheel lying on the host (file://), an sdist on the index's own
// server whose build backend writes a marker on whatever machine builds
// it (http://), and a git repository (git+https://); and a project page
// that links a private host wheel (file://) instead of a file of its own.
// Each install fails with an error that names the package and the
// reference it refused, and no host path; no marker is written, the sdist
// is never requested, and nothing of the private wheels reaches the
// sandbox. A wheel whose dependency is an ordinary name on the index
// installs with that dependency (and a direct reference whose marker does
// not apply to the sandbox's Python is never followed).
func TestInstallRefusesURLDependencies(t *testing.T) {
	needPip(t)
	markerDir, private := t.TempDir(), t.TempDir()
	marker := filepath.Join(markerDir, "built")
	const secret = "host-private-wheel-9d2b"

	ix := newURLIndex(t)
	privFile, privData := buildWheel(t, "privpkg", "1.0", fmt.Sprintf("SECRET = %q\n", secret))
	privPath := filepath.Join(private, privFile)
	linkFile, linkData := buildWheel(t, "hostlinked", "1.0", fmt.Sprintf("SECRET = %q\n", secret))
	linkPath := filepath.Join(private, linkFile)
	for path, data := range map[string][]byte{privPath: privData, linkPath: linkData} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ix.publish("", "sdpkg-1.0.tar.gz", buildSdist(t, "sdpkg-1.0", fmt.Sprintf(hostileBackend, marker)))
	sdistURL := ix.srv.URL + "/files/sdpkg-1.0.tar.gz"

	attacks := []struct{ pkg, ref, shown string }{
		{"fromfile", "privpkg @ file://" + privPath, "privpkg @ file:"},
		{"fromhttp", "sdpkg @ " + sdistURL, "sdpkg @ " + ix.srv.URL},
		{"fromgit", "gitpkg @ git+https://127.0.0.1:9/team/gitpkg.git@main", "gitpkg @ git+https://127.0.0.1:9"},
	}
	for _, a := range attacks {
		ix.publish(mustWheel(t, a.pkg, "1.0", "X = 1\n", a.ref))
	}
	ix.mu.Lock()
	ix.pages["hostlinked"] = []string{"file://" + linkPath}
	ix.mu.Unlock()
	ix.publish(mustWheel(t, "goodpkg", "1.0", "from good_dep import VALUE\n",
		"Good_Dep >=1.0", "privpkg @ file://"+privPath+" ; python_version < \"3\"", "neverpkg ; sys_platform == \"win32\""))
	ix.publish(mustWheel(t, "good_dep", "1.0", "VALUE = 42\n"))

	h := packagesHome(t, map[string]any{"package_index": ix.srv.URL + "/simple/"})
	b := startBridge(t, h)
	reqs := []string{"fromfile", "fromhttp", "fromgit", "hostlinked"}
	got := installAll(t, b, reqs)
	shown := map[string]string{"hostlinked": "file:"}
	for _, a := range attacks {
		shown[a.pkg] = a.shown
	}
	for i, req := range reqs {
		t.Logf("install(%q): %s", req, got[i].Error)
		if got[i].OK {
			t.Errorf("install(%q) succeeded: %v", req, got[i].Result)
			continue
		}
		for _, want := range []string{"PackageError", req, shown[req]} {
			if !strings.Contains(got[i].Error, want) {
				t.Errorf("install(%q)'s error does not say %q", req, want)
			}
		}
		for _, leak := range []string{private, markerDir, h, "Traceback", "site-packages"} {
			if strings.Contains(got[i].Error, leak) {
				t.Errorf("install(%q)'s error shows %q: %s", req, leak, got[i].Error)
			}
		}
	}

	ok := installAnswer(t, b.ok(`import json; print("INSTALL", json.dumps(await runtime.install("goodpkg")))`, "timeout", 120))
	if names := strings.Join(toStrings(ok["installed"]), ","); names != "good_dep 1.0,goodpkg 1.0" && names != "goodpkg 1.0,good_dep 1.0" {
		t.Errorf("install(goodpkg) installed %q, want goodpkg and good_dep", names)
	}
	mustContain(t, b.ok("import goodpkg; print('VALUE', goodpkg.VALUE)"), "VALUE 42")

	if data, err := os.ReadFile(marker); err == nil {
		t.Errorf("an sdist was built on the host (%q): the marker %s exists", data, marker)
	}
	for _, p := range ix.requested() {
		if strings.Contains(p, "sdpkg") || strings.Contains(p, "neverpkg") {
			t.Errorf("the host asked the index for %q, which only a refused or inapplicable reference names", p)
		}
	}
	seen := b.ok(fmt.Sprintf(`
import os
found = []
for top in ("/workspace", "/tmp"):
    for d, _, files in os.walk(top):
        for f in files:
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    if %q.encode() in fh.read():
                        found.append(os.path.join(d, f))
            except OSError:
                pass
try:
    import privpkg
    found.append("import privpkg")
except ImportError:
    pass
try:
    import hostlinked
    found.append("import hostlinked")
except ImportError:
    pass
print("FOUND", found)
`, secret))
	mustContain(t, seen, "FOUND []")
}

// buildSdist is a gzipped sdist whose build backend is backend.
func buildSdist(t *testing.T, dir, backend string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, text := range map[string]string{dir + "/pyproject.toml": hostilePyproject, dir + "/backend.py": backend} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mustWheel is buildWheel's file name and content, for publish.
func mustWheel(t *testing.T, name, version, body string, requires ...string) (string, string, []byte) {
	file, data := buildWheel(t, name, version, body, requires...)
	return name, file, data
}
