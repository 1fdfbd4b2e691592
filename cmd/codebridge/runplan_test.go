package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/codebridge/codebridge/sandbox"
)

// Planning a run reads the settings and leaves them as the user gave
// them: the checked workspace, mounts and user are the plan's.
func TestPlanRunLeavesSettingsAlone(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	src := t.TempDir()
	s, err := parseFlags([]string{"--workspace", ws, "--mount", src + ":/mnt/src"}, map[string]string{"HOME": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before := *s
	plan, err := planRun(s.Workspace, s.Sandbox, s.Upstream, s.State, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, *s) {
		t.Errorf("planRun changed the settings:\nbefore %+v\nafter  %+v", before, *s)
	}
	realWS, _ := filepath.EvalSymlinks(ws)
	if plan.workspace == nil || plan.workspace.Source != realWS || plan.workspace.Volume {
		t.Errorf("workspace = %+v, want the directory %s", plan.workspace, realWS)
	}
	realSrc, _ := filepath.EvalSymlinks(src)
	if len(plan.mounts) != 1 || !reflect.DeepEqual(plan.mounts[0], sandbox.Mount{Source: realSrc, Target: "/mnt/src", ReadOnly: true}) {
		t.Errorf("mounts = %+v", plan.mounts)
	}
	// A normal user runs the code as themselves in their directory; root
	// gives the directory to the sandbox's user and keeps it.
	want := sandbox.DefaultUser
	if uid := os.Getuid(); uid != 0 {
		want = strconv.Itoa(uid) + ":" + strconv.Itoa(os.Getgid())
	}
	if plan.user != want || s.Sandbox.User != sandbox.DefaultUser {
		t.Errorf("plan user %q, settings user %q; want %q and %q", plan.user, s.Sandbox.User, want, sandbox.DefaultUser)
	}
}
