//go:build unix

package engine

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
	o := CurrentOwner()
	if o.Start == "" {
		t.Skip("no /proc here: a process's start time cannot be read")
	}
	pid := strconv.Itoa(o.PID)
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
	live, err := MakeTempDir(TempChannel)
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

	if n := SweepTempDirs(o); n != len(gone) {
		t.Errorf("SweepTempDirs removed %d, want %d", n, len(gone))
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

// TestSweepRemadeChannelDirs: a channel directory that an engine made
// again after the bridge gave up on a start (Podman's Docker-compatible
// create makes a missing bind-mount source, mode 0755, with the socket's
// directory inside) is removed by the next bridge, and by its own bridge
// once that bridge closes; one that holds anything, a link, or belongs to
// another user, is left as it is, and no link is followed. Before, only
// 0700 directories were swept, and a remade one stayed for good.
func TestSweepRemadeChannelDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	o := CurrentOwner()
	if o.Start == "" {
		t.Skip("no /proc here: a process's start time cannot be read")
	}
	pid := strconv.Itoa(o.PID)
	mk := func(path string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	remade := func(name string) string { // as the engine makes it
		p := mk(filepath.Join(tmp, name), 0o755)
		mk(filepath.Join(p, "s"), 0o755)
		return p
	}
	outside := mk(filepath.Join(tmp, "outside"), 0o755)
	if err := os.WriteFile(filepath.Join(outside, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gone := []string{
		remade("codebridge-channel-" + pid + "-1-1"),
		mk(filepath.Join(tmp, "codebridge-channel-"+pid+"-1-2"), 0o755), // the socket's directory never came
	}
	withFile := remade("codebridge-channel-" + pid + "-1-3")
	if err := os.WriteFile(filepath.Join(withFile, "s", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	withLink := mk(filepath.Join(tmp, "codebridge-channel-"+pid+"-1-4"), 0o755)
	if err := os.Symlink(outside, filepath.Join(withLink, "s")); err != nil {
		t.Fatal(err)
	}
	deep := remade("codebridge-channel-" + pid + "-1-5")
	mk(filepath.Join(deep, "s", "x"), 0o755)
	own := remade("codebridge-channel-" + pid + "-" + o.Start + "-6") // this bridge's: it still runs
	live := mk(filepath.Join(tmp, "codebridge-channel-"+pid+"-"+o.Start+"-7"), 0o700)
	if err := os.WriteFile(filepath.Join(live, "frames.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	kept := []string{withFile, withLink, deep, own, live, filepath.Join(outside, "keep")}
	if os.Geteuid() == 0 {
		other := remade("codebridge-channel-" + pid + "-1-8")
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, other)
	}

	if n := SweepTempDirs(o); n != len(gone) {
		t.Errorf("SweepTempDirs removed %d, want %d", n, len(gone))
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

	// The bridge closes: its own remade directory goes, its live one (which
	// holds something) stays, and nobody else's is touched.
	if n := SweepRemade(o); n != 1 {
		t.Errorf("SweepRemade removed %d, want 1", n)
	}
	if _, err := os.Lstat(own); !os.IsNotExist(err) {
		t.Errorf("this bridge's remade directory is still there (%v)", err)
	}
	for _, p := range []string{live, withFile, withLink, deep} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
