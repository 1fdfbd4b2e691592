package engine

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestOwnerIsStale(t *testing.T) {
	me := CurrentOwner()
	// A process that has exited: its pid is free (or reused, with another
	// start time).
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(cmd.Process.Pid)
	parent := os.Getppid()

	cases := []struct {
		name   string
		labels map[string]string
		stale  bool
	}{
		{"mine", me.Labels(), false},
		{"another host", map[string]string{LabelHost: "elsewhere", LabelPID: dead}, false},
		{"dead owner", map[string]string{LabelHost: me.Host, LabelPID: dead, LabelStart: "1"}, true},
		{"live owner", map[string]string{LabelHost: me.Host, LabelPID: strconv.Itoa(parent), LabelStart: processStart(parent)}, false},
		{"pid reused", map[string]string{LabelHost: me.Host, LabelPID: strconv.Itoa(parent), LabelStart: "999999999"}, true},
		{"my pid, earlier process", map[string]string{LabelHost: me.Host, LabelPID: strconv.Itoa(me.PID), LabelStart: "1"}, true},
		{"no pid", map[string]string{LabelHost: me.Host}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := me.IsStale(c.labels); got != c.stale {
				t.Fatalf("isStale(%v) = %v, want %v", c.labels, got, c.stale)
			}
		})
	}
}
