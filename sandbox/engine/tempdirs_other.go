//go:build !unix

package engine

// ownPrivateDir is false where file ownership cannot be read the Unix way:
// nothing is swept there.
func ownPrivateDir(string) bool { return false }

// ownDir is false there too.
func ownDir(string) bool { return false }
