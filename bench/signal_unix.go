//go:build unix

package main

import "syscall"

// signalProfile asks the bridge with pid to open or close a profiling
// window (cmd/codebridge/benchprofile.go).
func signalProfile(pid int) { _ = syscall.Kill(pid, syscall.SIGUSR1) }
