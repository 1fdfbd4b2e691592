// Command kubelab-pause is the lab cluster's pod-sandbox ("pause") image: it
// holds a Pod's namespaces open and does nothing until it is told to stop.
// The lab has no registry to pull the upstream pause image from, so up builds
// this static binary into a FROM scratch image and imports it into containerd.
//
// As PID 1 of a Pod that shares its process namespace it also reaps orphaned
// children, as the upstream pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reapChildren()
	}
}

// reapChildren collects every child that has exited, so none stays a zombie.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
