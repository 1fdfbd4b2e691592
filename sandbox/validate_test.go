package sandbox

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	ok := []Config{
		{},
		{User: "1000:1000", Limits: Limits{Memory: 1 << 30, Pids: 64, CPUs: 0.5, Runtime: "runsc"}, OutputLimit: 100},
		{Workspace: &Mount{Source: "vol", Volume: true}, Mounts: []Mount{{Source: "/src", Target: "/mnt/src", ReadOnly: true}}},
	}
	for _, cfg := range ok {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Limits: Limits{Memory: -1}}, "memory limit is negative"},
		{Config{Limits: Limits{Pids: -5}}, "process limit is negative"},
		{Config{Limits: Limits{CPUs: -0.5}}, "CPU limit is negative"},
		{Config{Limits: Limits{TmpSize: -1}}, "tmpfs size is negative"},
		{Config{Limits: Limits{Runtime: "runsc --debug"}}, "not a runtime name"},
		{Config{User: "0:0"}, "root"},
		{Config{User: "root"}, "root"},
		{Config{User: "1000:00"}, "root"},
		{Config{User: "1:2:3"}, "not uid:gid"},
		{Config{OutputLimit: -1}, "output limit is negative"},
		{Config{Grace: -1}, "must not be negative"},
		{Config{Workspace: &Mount{}}, "workspace has no source"},
		{Config{Mounts: []Mount{{Target: "/mnt/x"}}}, "mount has no source"},
		{Config{Mounts: []Mount{{Source: "/src", Target: "mnt/src"}}}, "not an absolute container path"},
		{Config{Mounts: []Mount{{Source: "/src"}}}, "not an absolute container path"},
	}
	for _, b := range bad {
		err := b.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: err = %v, want %q", b.cfg, err, b.want)
		}
	}
}
