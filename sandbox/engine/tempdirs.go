package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A bridge keeps two kinds of private directory in the system's temporary
// directory: one per sandbox for its direct channel's socket, and one for
// the socket of a Podman service it started. Both are removed when the
// bridge is done with them; a bridge killed with SIGKILL leaves them, and
// the next bridge removes them ([SweepTempDirs]), as it removes that
// bridge's containers. The owner is in the name, as in a container's labels.
const (
	TempChannel = "channel"
	TempPodman  = "podman"
)

// MakeTempDir makes a private directory (mode 0700) of the given kind,
// named codebridge-KIND-PID-START-RANDOM after the bridge that owns it.
func MakeTempDir(kind string) (string, error) {
	o := CurrentOwner()
	return os.MkdirTemp("", fmt.Sprintf("codebridge-%s-%d-%s-", kind, o.PID, o.Start))
}

// SweepTempDirs removes the private directories of bridges on this host
// that no longer run, and returns how many it removed. It removes only
// what such a bridge could have made, or an engine made again in its
// place: a real directory (not a link) of this user whose name parses,
// either private (mode 0700) with whatever the bridge left in it, or of
// any mode holding nothing but empty directories. The second is what
// Podman's Docker-compatible API leaves when a create it was still working
// on after the bridge gave up and removed the channel's directory makes
// the missing bind-mount source again (mode 0755, as the engine's user);
// it is removed a directory at a time (rmdir), so nothing in it is
// followed or lost. Another user's directory of that name, or a name of an
// older codebridge, is left alone.
func SweepTempDirs(o Owner) int {
	return sweepTempDirsOf(o.IsStale, true)
}

// SweepRemade removes the empty directories of this bridge's own that an
// engine made again after the bridge removed them (see [SweepTempDirs]),
// once its sandboxes are gone; it returns how many it removed.
func SweepRemade(o Owner) int {
	pid := strconv.Itoa(o.PID)
	return sweepTempDirsOf(func(labels map[string]string) bool {
		return labels[LabelPID] == pid && labels[LabelStart] == o.Start
	}, false)
}

// sweepTempDirsOf removes the directories in the system's temporary
// directory whose owner (read from the name) is gone by gone: those that
// hold only empty directories, and, with private, those of mode 0700 with
// anything in them.
func sweepTempDirsOf(gone func(labels map[string]string) bool, private bool) int {
	root := os.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		labels, ok := tempDirOwner(e.Name())
		if !ok || !gone(labels) {
			continue
		}
		path := filepath.Join(root, e.Name())
		switch {
		case !ownDir(path): // another user's, or a link: left alone
		case private && ownPrivateDir(path):
			if os.RemoveAll(path) == nil {
				n++
			}
		case removeEmptyTree(path, 2) == nil:
			n++
		}
	}
	return n
}

// removeEmptyTree removes dir when it holds nothing but empty directories,
// at most depth levels deep, a directory at a time: a file, a link or
// anything else in it (also one that appears meanwhile) leaves it, and
// links are never followed. dir itself must not be a link (Lstat first).
func removeEmptyTree(dir string, depth int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if depth <= 1 || e.Type() != fs.ModeDir { // from Lstat: a link is not a directory
			return fmt.Errorf("%s holds %s", dir, e.Name())
		}
		if err := removeEmptyTree(sub, depth-1); err != nil {
			return err
		}
	}
	return os.Remove(dir) // rmdir: fails if anything came in meanwhile
}

// tempDirOwner reads the owner from a name [MakeTempDir] made, as the
// labels [owner.IsStale] reads.
func tempDirOwner(name string) (map[string]string, bool) {
	for _, kind := range []string{TempChannel, TempPodman} {
		rest, ok := strings.CutPrefix(name, "codebridge-"+kind+"-")
		if !ok {
			continue
		}
		f := strings.Split(rest, "-")
		if len(f) != 3 {
			return nil, false
		}
		if pid, err := strconv.Atoi(f[0]); err != nil || pid <= 0 {
			return nil, false
		}
		host, _ := os.Hostname()
		return map[string]string{LabelHost: host, LabelPID: f[0], LabelStart: f[1]}, true
	}
	return nil, false
}
