//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// ownPrivateDir reports whether path is a directory, not a link, of this
// process's user, that only that user may enter.
func ownPrivateDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
