// Package pyruntime holds the Python side of codebridge: the `mcp` package
// that runs inside the sandbox container, and the loader that installs it.
//
// The Python sources are embedded in the Go binary. The host starts the
// container with `python3 -I -u -c` [Loader] and writes [Archive] to its
// stdin; pyruntime/PROTOCOL.md is the contract both sides keep. The Python
// code is stdlib-only and is tested with unittest inside the real sandbox
// image (pyruntime/tests).
package pyruntime

import (
	"archive/zip"
	"bytes"
	"embed"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"
)

//go:embed loader.py mcp/*.py mcp/MANUAL.txt mcp/servers/*.py
var files embed.FS

// Loader returns the bootstrap program the container runs with python3 -c.
func Loader() string {
	b, err := files.ReadFile("loader.py")
	if err != nil {
		panic("runtime: loader.py is not embedded: " + err.Error())
	}
	return string(b)
}

// OOMKillsSource returns the definition of the loader's _oom_kills(): how
// many processes the container's memory cgroup killed (v2 or v1), or None.
// The Kubernetes engine runs it in a Pod beside the runtime, to tell an
// out-of-memory kill from another SIGKILL the way the loader's init does;
// one definition serves both.
func OOMKillsSource() string {
	src := Loader()
	start := strings.Index(src, "def _oom_kills():")
	end := strings.Index(src[max(start, 0):], "\n\n\n")
	if start < 0 || end < 0 {
		panic("runtime: loader.py does not define _oom_kills() followed by two blank lines")
	}
	return src[start:start+end] + "\n"
}

var archive = sync.OnceValue(func() []byte {
	var names []string
	err := fs.WalkDir(files, "mcp", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, path)
		}
		return nil
	})
	if err != nil {
		panic("runtime: walking the embedded package: " + err.Error())
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		src, _ := files.ReadFile(name)
		// A fixed time keeps the archive identical from build to build.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			panic(err)
		}
		if _, err := w.Write(src); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// Archive returns a zip of the `mcp` package, built once per process. The
// bytes are shared: do not modify them.
func Archive() []byte { return archive() }

// Manual returns the sandbox manual, a template with {python} and
// {servers} fields (and {{ }} for literal braces), as the runtime's
// capability_summary() fills it.
func Manual() string {
	b, err := files.ReadFile("mcp/MANUAL.txt")
	if err != nil {
		panic("runtime: MANUAL.txt is not embedded: " + err.Error())
	}
	return string(b)
}
