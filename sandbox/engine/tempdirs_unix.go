//go:build unix

package engine

import (
	"os"
	"syscall"
)

// ownPrivateDir reports whether path is a directory, not a link, of this
// process's user, that only that user may enter.
func ownPrivateDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && ownedDir(fi) && fi.Mode().Perm() == 0o700
}

// ownDir reports whether path is a directory, not a link, of this
// process's user.
func ownDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && ownedDir(fi)
}

func ownedDir(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.IsDir() && ok && int(st.Uid) == os.Geteuid()
}
