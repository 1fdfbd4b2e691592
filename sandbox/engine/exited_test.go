package engine

import (
	"strings"
	"testing"
)

func TestExitReason(t *testing.T) {
	cases := []struct {
		name      string
		oom       bool
		known     bool
		code      int
		want, not string
	}{
		{"out of memory", true, true, 137, "it ran out of memory (the limit is 512 MiB)", "signal"},
		{"SIGKILL, not out of memory", false, true, 137, "killed by signal 9 (SIGKILL)", "memory"},
		{"SIGKILL, nobody could tell", false, false, 137, "killed by signal 9 (SIGKILL); if the code used much memory, it ran out (the limit is 512 MiB)", ""},
		{"abort", false, false, 134, "killed by signal 6 (SIGABRT)", "memory"},
		{"os._exit(3)", false, false, 3, "exited with code 3 (os._exit() ends the whole sandbox", "signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ExitReason(c.oom, c.known, c.code, 512<<20)
			if !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
				t.Fatalf("ExitReason = %q, want %q and not %q", got, c.want, c.not)
			}
		})
	}
}
