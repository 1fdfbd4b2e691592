package main

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/discovery"
)

// A --config file that does not exist is a mistake in the command line:
// exit 2, naming the file, before anything starts.
func TestConfigFlagMissingFile(t *testing.T) {
	home := t.TempDir()
	missing := filepath.Join(home, "nope.json")
	for _, argv := range [][]string{{"servers", "--config", missing}, {"tools", "--config=" + missing}, {"doctor", "--config", missing}} {
		out, errOut, code := runCLI(t, map[string]string{"HOME": home}, argv...)
		if code != 2 || out != "" || !strings.Contains(errOut, "config file "+missing+" does not exist") {
			t.Errorf("%v: exit %d, stdout %q, stderr %s", argv, code, out, errOut)
		}
	}
	present := filepath.Join(home, "yes.json")
	writeFile(t, present, `{"mcpServers": {}}`)
	if _, errOut, code := runCLI(t, map[string]string{"HOME": home}, "servers", "--config", present); code != 0 {
		t.Errorf("an existing --config file: exit %d: %s", code, errOut)
	}
}

// doctor's fix for a config file that does not exist (named by a
// variable) is to create it or stop naming it, never to edit it.
func TestDoctorFixForMissingConfig(t *testing.T) {
	home := t.TempDir()
	missing := filepath.Join(home, "gone.json")
	_, problems := discovery.Load(discovery.Options{Home: home, Files: []string{missing}})
	if len(problems) != 1 || !errors.Is(problems[0], fs.ErrNotExist) {
		t.Fatalf("problems %v", problems)
	}
	fix := configFix(problems[0])
	if strings.HasPrefix(fix, "edit") || !strings.Contains(fix, "create "+missing) {
		t.Errorf("fix %q", fix)
	}
	bad := filepath.Join(home, "bad.json")
	writeFile(t, bad, `{`)
	_, problems = discovery.Load(discovery.Options{Home: home, Files: []string{bad}})
	if len(problems) != 1 || configFix(problems[0]) != "edit "+bad+" as the message says" {
		t.Errorf("problems %v", problems)
	}
}

// exec takes --state-dir, as serve does: it writes skills and the audit
// log there.
func TestExecStateDirFlag(t *testing.T) {
	c := &cli{getenv: func(string) string { return "" }}
	if c.execCommand().Flags().Lookup("state-dir") == nil {
		t.Fatal("exec has no --state-dir")
	}
}

// tools with no servers says so; servers shows a server's whole launch
// line, arguments included.
func TestToolsAndServersListings(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	out, errOut, code := runCLI(t, env, "tools")
	if code != 0 || !strings.Contains(out, "no servers configured") {
		t.Errorf("tools: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	long := "/home/me/a/directory/with/a/long/name/the/user/wants/to/see/in/full"
	writeFile(t, filepath.Join(home, "MCPs", "fs.json"), `{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "`+long+`"]}}}`)
	out, errOut, code = runCLI(t, env, "servers")
	if code != 0 || !strings.Contains(out, "npx -y @modelcontextprotocol/server-filesystem "+long) {
		t.Errorf("servers: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}

// A build run through sudo with Podman ends by saying how the user who
// ran sudo copies the image into their rootless storage.
func TestRootStorageHint(t *testing.T) {
	tag := "localhost/codebridge-python:bookworm"
	got := rootStorageHint(0, "me", "", tag)
	if !strings.Contains(got, "sudo podman save "+tag+" | podman load") || !strings.Contains(got, "(as me)") {
		t.Errorf("hint %q", got)
	}
	for _, c := range []struct {
		euid         int
		user, engine string
	}{{1000, "me", ""}, {0, "", ""}, {0, "root", "podman"}, {0, "me", "docker"}} {
		if h := rootStorageHint(c.euid, c.user, c.engine, tag); h != "" {
			t.Errorf("%+v: hint %q", c, h)
		}
	}
}
