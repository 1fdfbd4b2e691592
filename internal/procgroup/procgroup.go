// Package procgroup starts helper processes (upstream MCP servers, a private
// Podman service) so that they and every child they start can be stopped
// together, and die with the bridge even when the bridge is SIGKILLed.
package procgroup

import (
	"os/exec"
	"time"
)

// Prepare makes cmd start in its own process group and, on Linux, receive
// SIGTERM when the bridge dies. Call it before cmd.Start.
func Prepare(cmd *exec.Cmd) { prepare(cmd) }

// Stop sends SIGTERM to cmd's whole process group, waits up to grace for
// cmd to exit, then sends SIGKILL to the group. It returns once cmd has
// exited. It must not be called before cmd.Start, and it calls cmd.Wait
// unless waited is non-nil, in which case it waits for waited to close.
func Stop(cmd *exec.Cmd, grace time.Duration, waited <-chan struct{}) {
	if cmd.Process == nil {
		return
	}
	if waited == nil {
		ch := make(chan struct{})
		go func() { _ = cmd.Wait(); close(ch) }()
		waited = ch
	}
	signalGroup(cmd, false)
	select {
	case <-waited:
		// The leader is gone; children that ignored SIGTERM still die.
		signalGroup(cmd, true)
		return
	case <-time.After(grace):
	}
	signalGroup(cmd, true)
	<-waited
}

// Kill sends SIGKILL to cmd's whole process group at once.
func Kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		signalGroup(cmd, true)
	}
}
