package engine

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Owner identifies the bridge process that creates containers, so that a
// later bridge can tell whether a labelled container's owner still runs.
type Owner struct {
	Host  string
	PID   int
	Start string // the process start time, to survive pid reuse
}

// CurrentOwner is the owner of what this bridge makes: this host, process
// and its start time.
func CurrentOwner() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return Owner{Host: host, PID: pid, Start: processStart(pid)}
}

// Labels are the labels that name the owner on a container.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		LabelKey:   "1",
		LabelHost:  o.Host,
		LabelPID:   strconv.Itoa(o.PID),
		LabelStart: o.Start,
	}
}

// IsStale reports whether a container with these labels was made by a
// bridge on this host that no longer runs. Containers of other hosts (a
// shared remote engine) and of live bridges are never stale.
func (o Owner) IsStale(labels map[string]string) bool {
	if labels[LabelHost] != o.Host {
		return false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if err != nil || pid <= 0 {
		return true // labelled by us, but not with a usable owner
	}
	if pid == o.PID {
		return labels[LabelStart] != o.Start
	}
	if !processAlive(pid) {
		return true
	}
	start := processStart(pid)
	return start != "" && labels[LabelStart] != "" && start != labels[LabelStart]
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processStart returns the start time of pid in clock ticks since boot
// (field 22 of /proc/PID/stat), or "" where /proc is not available.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may contain spaces and parentheses; the
	// fields after it start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
