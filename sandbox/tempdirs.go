package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A bridge keeps two kinds of private directory in the system's temporary
// directory: one per sandbox for its direct channel's socket, and one for
// the socket of a Podman service it started. Both are removed when the
// bridge is done with them; a bridge killed with SIGKILL leaves them, and
// the next bridge removes them ([sweepTempDirs]), as it removes that
// bridge's containers. The owner is in the name, as in a container's labels.
const (
	tempChannel = "channel"
	tempPodman  = "podman"
)

// makeTempDir makes a private directory (mode 0700) of the given kind,
// named codebridge-KIND-PID-START-RANDOM after the bridge that owns it.
func makeTempDir(kind string) (string, error) {
	o := currentOwner()
	return os.MkdirTemp("", fmt.Sprintf("codebridge-%s-%d-%s-", kind, o.pid, o.start))
}

// sweepTempDirs removes the private directories of bridges on this host
// that no longer run, and returns how many it removed. It removes only
// what such a bridge could have made: a real directory (not a link), of
// this user, mode 0700, whose name parses. Another user's directory of
// that name, or a name of an older codebridge, is left alone.
func sweepTempDirs(o owner) int {
	root := os.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		labels, ok := tempDirOwner(e.Name())
		if !ok || !o.isStale(labels) || !ownPrivateDir(filepath.Join(root, e.Name())) {
			continue
		}
		if os.RemoveAll(filepath.Join(root, e.Name())) == nil {
			n++
		}
	}
	return n
}

// tempDirOwner reads the owner from a name [makeTempDir] made, as the
// labels [owner.isStale] reads.
func tempDirOwner(name string) (map[string]string, bool) {
	for _, kind := range []string{tempChannel, tempPodman} {
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
