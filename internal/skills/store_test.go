package skills

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/statedir"
)

func TestSaveGetListDelete(t *testing.T) {
	st := Open(statedir.Dir(t.TempDir()))
	if list, err := st.List(); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	src := "def double(x):\n    return 2 * x\n"
	if _, err := st.Save("double", src, "Doubles a number.\nSecond line."); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get("double")
	if err != nil || got.Source != src || got.Description != "Doubles a number.\nSecond line." {
		t.Fatalf("got %+v, %v", got, err)
	}
	data, _ := os.ReadFile(filepath.Join(st.Dir(), "double.py"))
	if !strings.HasPrefix(string(data), "# codebridge skill: double  -*- coding: utf-8 -*-\n# Doubles a number.\n") {
		t.Fatalf("file is not readable as documented:\n%s", data)
	}
	files, err := st.Files()
	if err != nil || len(files) != 1 || files[0].Path != sandboxDir+"/double.py" {
		t.Fatalf("files: %+v %v", files, err)
	}
	if _, err := st.Delete("double"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("double"); err == nil || !strings.Contains(err.Error(), "no skill") {
		t.Fatalf("after delete: %v", err)
	}
}

func TestSaveRefuses(t *testing.T) {
	st := Open(statedir.Dir(t.TempDir()))
	cases := map[string]struct{ name, src, want string }{
		"bad name":  {"../x", "x = 1", "not a skill name"},
		"keyword":   {"class", "x = 1", "keyword"},
		"private":   {"_x", "x = 1", "not a skill name"},
		"empty":     {"x", "  ", "no source"},
		"oversized": {"big", "x = 1\n" + strings.Repeat("#", maxSource), "at most"},
	}
	for what, c := range cases {
		if _, err := st.Save(c.name, c.src, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", what, err, c.want)
		}
	}
}

func TestHandWrittenFile(t *testing.T) {
	d := statedir.Dir(t.TempDir())
	dir, _ := d.Ensure(statedir.Skills)
	must(t, os.WriteFile(filepath.Join(dir, "mine.py"), []byte("def mine():\n    return 1\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "not a skill.py"), []byte("x"), 0o600))
	list, err := Open(d).List()
	if err != nil || len(list) != 1 || list[0].Source != "def mine():\n    return 1\n" {
		t.Fatalf("%+v %v", list, err)
	}
}

// TestDescriptionNeverBecomesCode: a carriage return (Python ends a line
// there), an escape code or a form feed in a description is kept escaped
// in its comment line; a lone carriage return in the source becomes the
// line feed Python reads it as; a file saved before this (its
// description holding a raw carriage return) is given to the sandbox
// escaped too.
func TestDescriptionNeverBecomesCode(t *testing.T) {
	d := statedir.Dir(t.TempDir())
	st := Open(d)
	sk, err := st.Save("hi", "def hi():\r\n    return 1  # ok\rprint('hidden')\n", "Says hi.\rimport os\r\nline two \x1b[2J\f\u202e")
	if err != nil {
		t.Fatal(err)
	}
	want := "# codebridge skill: hi  -*- coding: utf-8 -*-\n# Says hi.\\rimport os\n# line two \\x1b[2J\\f\\u202e\n\n" +
		"def hi():\n    return 1  # ok\nprint('hidden')\n"
	data, _ := os.ReadFile(filepath.Join(st.Dir(), "hi.py"))
	if string(data) != want || string(sk.File()) != want {
		t.Fatalf("file:\n%q\nwant:\n%q", data, want)
	}
	got, err := st.Get("hi")
	if err != nil || got.Description != sk.Description || string(got.File()) != want {
		t.Fatalf("read back: %+v %v", got, err)
	}

	old := "# codebridge skill: old\n# Old.\rprint('ran')\n\ndef old():\n    pass\n"
	must(t, os.WriteFile(filepath.Join(st.Dir(), "old.py"), []byte(old), 0o600))
	files, err := st.Files()
	if err != nil || len(files) != 2 {
		t.Fatalf("files: %+v %v", files, err)
	}
	if got := string(files[1].Data); got != "# codebridge skill: old  -*- coding: utf-8 -*-\n# Old.\\rprint('ran')\n\ndef old():\n    pass\n" {
		t.Fatalf("an old file's description reaches the sandbox as:\n%q", got)
	}
	if old, err := st.Get("old"); err != nil || old.Description != `Old.\rprint('ran')` {
		t.Fatalf("an old file's description reads as %q, %v", old.Description, err)
	}
}

// TestDescriptionIsNoEncoding: a description whose first line declares
// utf-7 would make Python, reading the file itself, decode "+AAo-" in
// the next line as a line break and run what follows. The file declares
// utf-8 on its first line, which Python reads first.
func TestDescriptionIsNoEncoding(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to read the file with")
	}
	st := Open(statedir.Dir(t.TempDir()))
	if _, err = st.Save("x", "def x():\n    pass\nprint('SOURCE-RAN')\n", "coding: utf-7\n+AAo-print('DESCRIPTION-' 'RAN')"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, filepath.Join(st.Dir(), "x.py")).CombinedOutput()
	if err != nil || strings.Contains(string(out), "DESCRIPTION-RAN") || !strings.Contains(string(out), "SOURCE-RAN") {
		t.Fatalf("python3 ran the file: %v\n%s", err, out)
	}
}

func TestStoresOfPrincipalsAreApart(t *testing.T) {
	root := Open(statedir.Dir(t.TempDir()))
	alice, bob := root.Of(principal.Token("alice")), root.Of(principal.Token("bob"))
	if _, err := alice.Save("report", "def report():\n    return 'alice'\n", "alice's"); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Save("report", "def report():\n    return 'bob'\n", "bob's"); err != nil {
		t.Fatal(err)
	}
	if sk, err := alice.Get("report"); err != nil || !strings.Contains(sk.Source, "'alice'") {
		t.Fatalf("alice's skill was overwritten: %+v %v", sk, err)
	}
	if list, _ := root.List(); len(list) != 0 {
		t.Fatalf("the local user sees token holders' skills: %v", list)
	}
	if _, err := bob.Delete("report"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Get("report"); err != nil {
		t.Fatalf("bob's delete reached alice: %v", err)
	}
	if root.Of(principal.Local()).Dir() != root.Dir() || alice.Of(principal.Token("bob")).Dir() != bob.Dir() {
		t.Fatal("Of is not taken from the state directory's root")
	}
}

// must fails the test at once when a step of its set-up returned an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
