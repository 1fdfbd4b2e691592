//go:build unix && !linux

package procgroup

import "syscall"

// Only Linux has a parent-death signal; elsewhere the bridge's own shutdown
// path stops its children.
func setDeathSignal(*syscall.SysProcAttr) {}
