package packages

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseMetadata: the headers of METADATA as Python's email parser
// reads them; the body is never read; hostile sizes are refused.
func TestParseMetadata(t *testing.T) {
	md, err := parseMetadata(strings.NewReader("Metadata-Version: 2.1\r\nname: Foo.Bar\r\nVERSION: 1.0\r\n" +
		"Requires-Dist: a (>=1)\r\nRequires-Dist: b;\r\n  extra == 'x'\r\nSummary: s\r\n\r\nRequires-Dist: fromthebody\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if md.Name != "Foo.Bar" || md.Version != "1.0" || !slices.Equal(md.RequiresDist, []string{"a (>=1)", "b; extra == 'x'"}) {
		t.Fatalf("%+v", md)
	}
	// A line that is not a header ends the headers, as in Python.
	md, err = parseMetadata(strings.NewReader("Name: x\nVersion: 1\nnot a header\nRequires-Dist: hidden\n"))
	if err != nil || len(md.RequiresDist) != 0 {
		t.Fatalf("after a line that is not a header: %+v %v", md, err)
	}
	// A body of any size is not read.
	body := io.MultiReader(strings.NewReader("Name: x\nVersion: 1\n\n"), neverEnding('x'))
	if _, err := parseMetadata(io.LimitReader(body, 1<<30)); err != nil {
		t.Fatalf("a large body: %v", err)
	}
	for name, text := range map[string]io.Reader{
		"huge headers":       io.MultiReader(strings.NewReader("Name: x\nVersion: 1\n"), io.LimitReader(repeat("X-Header: yyyyyyyyyyyyyyyyyyyy\n"), 1<<30)),
		"one endless header": io.MultiReader(strings.NewReader("Name: x\nVersion: 1\nRequires-Dist: "), io.LimitReader(neverEnding('a'), 1<<30)),
		"too many deps":      strings.NewReader("Name: x\nVersion: 1\n" + strings.Repeat("Requires-Dist: a\n", maxRequiresDist+1)),
		"no name":            strings.NewReader("Version: 1\n"),
		"empty":              strings.NewReader(""),
	} {
		if _, err := parseMetadata(text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// repeat is an endless reader of s.
func repeat(s string) io.Reader {
	return &repeater{s: s}
}

type repeater struct {
	s   string
	off int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}

// writeZip writes a zip of the given files to a temporary file.
func writeZip(t *testing.T, files [][2]string) string {
	t.Helper()
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
	}
	zw.Close()
	path := filepath.Join(t.TempDir(), "x.whl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadWheelMetadata: METADATA is read from the one .dist-info at the
// top of the wheel, of the project asked for (names compared
// normalized); a compressed METADATA that expands beyond the bound and a
// zip whose list of files claims more than the bound are refused.
func TestReadWheelMetadata(t *testing.T) {
	ok := writeZip(t, [][2]string{{"Foo_Bar-1.0.dist-info/METADATA", "Name: Foo.Bar\nVersion: 1.0\nRequires-Dist: x\n"}, {"foo_bar/__init__.py", ""}})
	md, err := readWheelMetadata(ok, "foo-bar")
	if err != nil || md.Name != "Foo.Bar" || !slices.Equal(md.RequiresDist, []string{"x"}) {
		t.Fatalf("%+v %v", md, err)
	}
	bomb := "Name: x\nVersion: 1\n" + strings.Repeat("X-Pad: "+strings.Repeat("z", 60)+"\n", (maxMetadataHeaders/68)+100)
	for name, c := range map[string]struct {
		files [][2]string
		want  string
	}{
		"two dist-infos":  {[][2]string{{"x-1.dist-info/METADATA", "Name: x\nVersion: 1\n"}, {"y-1.dist-info/METADATA", "Name: y\nVersion: 1\n"}}, "more than one .dist-info"},
		"another project": {[][2]string{{"other-1.dist-info/METADATA", "Name: x\nVersion: 1\n"}}, "of another project"},
		"nested":          {[][2]string{{"pkg/x-1.dist-info/METADATA", "Name: x\nVersion: 1\n"}}, "no .dist-info/METADATA"},
		"none":            {[][2]string{{"x/__init__.py", ""}}, "no .dist-info/METADATA"},
		"bomb":            {[][2]string{{"x-1.dist-info/METADATA", bomb}}, "bytes of headers"},
	} {
		if _, err := readWheelMetadata(writeZip(t, c.files), "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// A zip whose end record claims a central directory beyond the bound.
	data, _ := os.ReadFile(ok)
	end := bytes.LastIndex(data, []byte("PK\x05\x06"))
	binary.LittleEndian.PutUint32(data[end+12:], maxZipDirectory+1)
	huge := filepath.Join(t.TempDir(), "huge.whl")
	must(t, os.WriteFile(huge, data, 0o600))
	if _, err := readWheelMetadata(huge, "foo-bar"); err == nil || !strings.Contains(err.Error(), "list of files") {
		t.Errorf("a huge central directory: %v", err)
	}
	short := filepath.Join(t.TempDir(), "short.whl")
	must(t, os.WriteFile(short, []byte("PK"), 0o600))
	if _, err := readWheelMetadata(short, "x"); err == nil {
		t.Error("a two-byte file was read as a wheel")
	}
}

// TestParseWheelFile: a wheel's file name gives its normalized project
// name and its version; anything else is refused.
func TestParseWheelFile(t *testing.T) {
	for file, want := range map[string]string{
		"numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": "numpy 2.2.6",
		"Foo_Bar-1.0rc1-1-py3-none-any.whl":                                      "foo-bar 1.0rc1",
		"zope.interface-6.0-cp311-cp311-linux_x86_64.whl":                        "zope-interface 6.0",
	} {
		name, v, err := parseWheelFile(file)
		if err != nil || name+" "+v.String() != want {
			t.Errorf("%s: %s %s %v, want %s", file, name, v, err, want)
		}
	}
	for _, bad := range []string{"x-1.0.tar.gz", "x-1.0-py3-none-any.zip", "x-1.0-py3-any.whl", "../x-1.0-py3-none-any.whl",
		"x-1.0-py3-none-any.whl/", "x-notaversion-py3-none-any.whl", "-1.0-py3-none-any.whl", ".whl"} {
		if name, _, err := parseWheelFile(bad); err == nil {
			t.Errorf("%s: read as a wheel of %s", bad, name)
		}
	}
}

// TestParseDependency: Requires-Dist lines as real and hostile METADATA
// write them.
func TestParseDependency(t *testing.T) {
	for line, want := range map[string]string{
		"numpy>=1.23.2; python_version == \"3.11\"":        "numpy>=1.23.2",
		"typing-extensions (>=4.0) ; python_version<'3.8'": "typing-extensions>=4.0",
		"Pillow (>=8,<11)":                      "pillow>=8,<11",
		"Zope.Interface[Test_Extra] >= 5.0-RC1": "zope-interface[test-extra]>=5.0rc1",
		"x ~= 1.4.0, != 1.4.2":                  "x~=1.4.0,!=1.4.2",
		"x==2.*":                                "x==2.*",
		"x":                                     "x",
	} {
		d := parseDependency(line)
		if d.bad != "" || d.markerErr != "" || d.req.String() != want {
			t.Errorf("%q: %q (bad %q, marker %q), want %q", line, d.req.String(), d.bad, d.markerErr, want)
		}
	}
	for line, ref := range map[string]string{
		"x @ file:///home/me/x.whl":                       "file://…",
		"x@file:///home/me/x.whl":                         "file://…",
		"x @ FILE:/home/me/x.whl":                         "file://…",
		"x @ http://u:p@h.example:81/a;b ; os_name=='nt'": "http://h.example:81/…",
		"x @ git+ssh://git@github.com/a/b.git":            "git+ssh://github.com/…",
		"x @ hg+file:///srv/repo":                         "hg+file://…",
		"x @ ../x":                                        "<a path>",
		"x @ C:\\Users\\me\\x.whl":                        "",
		"x @ \x1b[31mred":                                 "<a path>",
	} {
		d := parseDependency(line)
		if d.ref == "" || d.bad == "" || (ref != "" && d.ref != ref) {
			t.Errorf("%q: ref %q bad %q, want ref %q", line, d.ref, d.bad, ref)
		}
		if strings.Contains(d.ref, "home") || strings.Contains(d.ref, "Users") || strings.Contains(d.ref, "\x1b") || strings.Contains(d.ref, "u:p") {
			t.Errorf("%q: the reference shown is %q", line, d.ref)
		}
	}
	if d := parseDependency("x @ file:///a ; sys_platform == 'win32'"); d.marker == nil || d.markerErr != "" {
		t.Errorf("the marker of a direct reference is not read: %+v", d)
	}
	for _, line := range []string{"x===1.0", "x==1.0+cpu", "-e .", "x (>=1", "x >= banana", "x; (", "x[a/b]"} {
		d := parseDependency(line)
		if d.bad == "" && d.markerErr == "" {
			t.Errorf("%q was accepted as %q", line, d.req.String())
		}
	}
}

// linux311 is the sandbox's environment for markers.
var linux311 = Target{Python: "3.11", Implementation: "cp", ABIs: []string{"cp311"}, Platforms: []string{"manylinux_2_36_x86_64", "linux_x86_64"}}.markerEnv()

// TestMarkers: markers evaluated for the sandbox's Python, including odd
// spellings, extras compared normalized, and hostile markers refused.
func TestMarkers(t *testing.T) {
	for marker, want := range map[string]bool{
		`python_version >= "3.8"`:                                  true,
		`python_version < '3.10'`:                                  false,
		`"3.8" <= python_version`:                                  true,
		`python_version == "3.*"`:                                  true,
		`python_version ~= "3.9"`:                                  true,
		`python_full_version >= "3.11.0"`:                          true,
		`sys_platform == "linux" and platform_machine == "x86_64"`: true,
		`sys_platform == 'win32' or (os_name == 'posix' and implementation_name == 'cpython')`: true,
		`platform_system == "Windows"`:             false,
		`sys.platform == "linux"`:                  true,
		`os.name == "nt"`:                          false,
		`python_implementation == "CPython"`:       true,
		`platform_python_implementation != "PyPy"`: true,
		`"linux" in sys_platform`:                  true,
		`'arm' not in platform_machine`:            true,
		`platform_release >= "5"`:                  false,
		`python_version > "3.11"`:                  false,
		`python_version === "3.11"`:                true,
		`((((python_version >= "3"))))`:            true,
		`extra == "x"`:                             false,
	} {
		m, err := parseMarker(marker)
		if err != nil {
			t.Errorf("%s: %v", marker, err)
			continue
		}
		linux311["extra"] = ""
		if got, err := m.eval(linux311); err != nil || got != want {
			t.Errorf("%s = %v %v, want %v", marker, got, err, want)
		}
	}
	for _, bad := range []string{"", "python_version", `python_version >=`, `python_version >= "3`, `python_version >= '3' and`,
		`bogus == "1"`, `python_version >= 3.8`, `(python_version >= "3"`, `python_version >= "3")`, `os_name = "posix"`,
		`python_version >= "3" xor os_name == "posix"`, `__import__('os') == "x"`, strings.Repeat("(", maxMarkerDepth+1) + `os_name == "posix"` + strings.Repeat(")", maxMarkerDepth+1)} {
		if _, err := parseMarker(bad); err == nil {
			t.Errorf("%q was read as a marker", bad)
		}
	}
	m, _ := parseMarker(`os_name ~= "posix"`)
	if _, err := m.eval(linux311); err == nil {
		t.Error(`~= between strings evaluated`)
	}

	// Extras: a dependency applies with no extra, or with one asked for,
	// compared normalized.
	for line, c := range map[string]struct {
		extras []string
		want   bool
	}{
		`x ; extra == "Fast_Math"`:                     {[]string{"fast-math"}, true},
		`x ; extra == "fast-math"`:                     {nil, false},
		`x ; extra == "fast" and python_version < "3"`: {[]string{"fast"}, false},
		`x ; extra == "a" or extra == "b"`:             {[]string{"c", "b"}, true},
		`x ; python_version >= "3"`:                    {nil, true},
		`x`:                                            {[]string{"any"}, true},
		`x ; "fast.math" == extra`:                     {[]string{"fast-math"}, true},
	} {
		d := parseDependency(line)
		if got, err := d.applies(linux311, c.extras); err != nil || got != c.want {
			t.Errorf("%s with extras %q: %v %v, want %v", line, c.extras, got, err, c.want)
		}
	}
}

// TestMarkerEnv: the environment comes from the sandbox's platform tags,
// never from the host.
func TestMarkerEnv(t *testing.T) {
	for plat, want := range map[string][3]string{
		"manylinux_2_36_x86_64": {"linux", "x86_64", "posix"},
		"manylinux2014_aarch64": {"linux", "aarch64", "posix"},
		"musllinux_1_2_x86_64":  {"linux", "x86_64", "posix"},
		"linux_i686":            {"linux", "i686", "posix"},
		"macosx_11_0_arm64":     {"darwin", "arm64", "posix"},
		"win_amd64":             {"win32", "AMD64", "nt"},
	} {
		env := Target{Python: "3.12", Implementation: "pp", Platforms: []string{plat}}.markerEnv()
		if got := [3]string{env["sys_platform"], env["platform_machine"], env["os_name"]}; got != want {
			t.Errorf("%s: %q, want %q", plat, got, want)
		}
		if env["python_version"] != "3.12" || env["implementation_name"] != "pypy" || env["platform_python_implementation"] != "PyPy" {
			t.Errorf("%s: %v", plat, env)
		}
	}
}

// TestVersions: PEP 440 ordering and specifiers.
func TestVersions(t *testing.T) {
	order := []string{"1.0.dev0", "1.0a1", "1.0a2.dev1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0+abc", "1.0+5", "1.0.post1.dev0", "1.0.post1", "1.1", "1!0.1"}
	for i := range order {
		for j := range order {
			a, err1 := parseVersion(order[i])
			b, err2 := parseVersion(order[j])
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if got, want := a.Compare(b), cmpInt(i, j); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	for in, want := range map[string]string{"V1.0-RC.1": "1.0rc1", "1.0-1": "1.0.post1", "1.0.Alpha": "1.0a0", "01.002": "1.2", "1.0_dev-3": "1.0.dev3", "1.0+UBUNTU-1": "1.0+ubuntu.1", "2.0-preview2": "2.0rc2", "1.0.rev4": "1.0.post4"} {
		if v, err := parseVersion(in); err != nil || v.String() != want {
			t.Errorf("ParseVersion(%q) = %q %v, want %q", in, v.String(), err, want)
		}
	}
	for _, bad := range []string{"", "1.0.", "one", "1.0+", "1.0++x", "1..0", strings.Repeat("9", 19), "1" + strings.Repeat(".1", 40)} {
		if _, err := parseVersion(bad); err == nil {
			t.Errorf("%q was read as a version", bad)
		}
	}
	for c, want := range map[[2]string]bool{
		{"1.0", "==1"}: true, {"1.0.0", "==1.0"}: true, {"1.0+cpu", "==1.0"}: true, {"1.0", "==1.0+cpu"}: false,
		{"2.3.1", "==2.*"}: true, {"2.0", "==2.0.*"}: true, {"3.0", "==2.*"}: false, {"2.3", "!=2.*"}: false,
		{"1.4.5", "~=1.4.2"}: true, {"1.5", "~=1.4.2"}: false, {"1.9", "~=1.4"}: true, {"2.0", "~=1.4"}: false, {"1.0", "~=1"}: false,
		{"1.0rc1", "<1.0"}: false, {"0.9", "<1.0"}: true, {"1.0.post1", ">1.0"}: false, {"1.1", ">1.0"}: true,
		{"1.0", "<=1.0"}: true, {"1.0", ">=1.0"}: true, {"1.0", "===1.0"}: true, {"1.0", ">=x"}: false, {"1.0", ">=1.*"}: false,
		{"1.0", "1.0"}: false,
	} {
		v, _ := parseVersion(c[0])
		if got := v.Satisfies([]string{c[1]}); got != want {
			t.Errorf("%s %s = %v, want %v", c[0], c[1], got, want)
		}
	}
}
