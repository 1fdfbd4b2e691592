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
