package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEnsure(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	d := Dir(root)
	p, err := d.Ensure(Skills)
	if err != nil || p != filepath.Join(root, "skills") {
		t.Fatalf("Ensure: %q %v", p, err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v %v, want 0700", st.Mode().Perm(), err)
	}
	if f, err := d.EnsureParent(Audit); err != nil || f != filepath.Join(root, "audit.jsonl") {
		t.Fatalf("EnsureParent: %q %v", f, err)
	}
	if _, err := Dir("").Ensure(Skills); err == nil {
		t.Fatal("an empty state directory was accepted")
	}
}

func TestOfKeepsPrincipalsApart(t *testing.T) {
	root := Dir(filepath.Join(t.TempDir(), "state"))
	if root.Of("") != root {
		t.Fatal("the local user's state moved")
	}
	if got := root.Of("t-alice").Path(Skills); got != filepath.Join(string(root), "principals", "t-alice", "skills") {
		t.Fatalf("alice's skills at %s", got)
	}
	for _, bad := range []string{"..", ".", "../x", "a/b", ".hidden"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Of(%q) was accepted", bad)
				}
			}()
			root.Of(bad)
		}()
	}
}

// TestWriteFile: the file is replaced whole, and no temporary file is
// left beside it; a directory that is not there fails and leaves nothing.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := WriteFile(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries in the directory, want the file alone", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x")); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}
