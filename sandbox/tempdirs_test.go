//go:build unix

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepTempDirs removes the private directories of a bridge that no
// longer runs (here: this pid with another start time, as after pid
// reuse), and nothing else: not a live bridge's, not a link, not a
// directory others may enter, not a name of an older codebridge.
func TestSweepTempDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	o := currentOwner()
	if o.start == "" {
		t.Skip("no /proc here: a process's start time cannot be read")
	}
	pid := strconv.Itoa(o.pid)
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(tmp, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		mk("codebridge-channel-"+pid+"-1-123", 0o700),
		mk("codebridge-podman-"+pid+"-1-456", 0o700),
	}
	live, err := makeTempDir(tempChannel)
	if err != nil {
		t.Fatal(err)
	}
	kept := []string{
		live,
		mk("codebridge-channel-"+pid+"-2-789", 0o755), // not private
		mk("codebridge-channel-123456", 0o700),        // an older codebridge's
		mk("target", 0o700),
	}
	link := filepath.Join(tmp, "codebridge-channel-"+pid+"-3-1")
	if err := os.Symlink(kept[len(kept)-1], link); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, link)

	if n := sweepTempDirs(o); n != len(gone) {
		t.Errorf("sweepTempDirs removed %d, want %d", n, len(gone))
	}
	for _, p := range gone {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "target", "f")); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
}
