package main

import (
	"testing"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/sandbox"
)

func TestProjectVolume(t *testing.T) {
	local := principal.Local()
	a := projectVolume(local, "/home/u/src/My Project")
	if a != projectVolume(local, "/home/u/src/My Project") {
		t.Fatal("one project's volume name changes")
	}
	others := []string{
		projectVolume(local, "/home/u/other/My Project"),
		projectVolume(local, "/home/u/src/my project"),
		projectVolume(principal.Token("alice"), "/home/u/src/My Project"),
	}
	for _, o := range others {
		if o == a {
			t.Fatalf("two projects or principals share the volume %s", a)
		}
	}
	for _, n := range append(others, a, projectVolume(local, "/"), projectVolume(local, "/tmp/-rf --x\n\x1b[31m")) {
		if !volumeName(n) || len(n) > 64 {
			t.Errorf("%q is not a safe volume name", n)
		}
	}
	if want := "codebridge-ws-myproject-"; a[:len(want)] != want {
		t.Fatalf("the name does not show the project: %s", a)
	}
	if w, err := parseWorkspace(DefaultWorkspace); err != nil || !w.project {
		t.Fatalf("the default is not the project's volume: %+v %v", w, err)
	}
}

// TestHTTPWorkspacesPerPrincipal: serving HTTP with the kubernetes engine
// and --workspace project, each principal gets the project's workspace
// of their own (two principals, two names; one principal, one name); the
// local engines keep ephemeral sessions; a named workspace, which every
// principal would share, is refused; a host directory is refused on
// Kubernetes; the engine is told to check it can make claims.
func TestHTTPWorkspacesPerPrincipal(t *testing.T) {
	dir := t.TempDir()
	kube := &appSettings{}
	kube.Sandbox.Engine, kube.Upstream.Roots = "kubernetes", []string{dir}
	kube.Workspace.Workspace, _ = parseWorkspace("project")
	httpWorkspaces := func(s *appSettings) (func(principal.Principal) *sandbox.Mount, error) {
		return s.Workspace.httpWorkspaces(s.Sandbox.Engine, s.Upstream.Roots)
	}
	claims := func(s *appSettings) bool { return s.Sandbox.engineOptions(nil, s.Workspace.persistent()).Workspaces }
	of, err := httpWorkspaces(kube)
	if err != nil || of == nil {
		t.Fatalf("kubernetes, project: %v", err)
	}
	alice, bob := of(principal.Token("alice")), of(principal.Token("bob"))
	if alice.Source == bob.Source || !alice.Volume || of(principal.Token("alice")).Source != alice.Source {
		t.Errorf("alice %q, bob %q: not one workspace each", alice.Source, bob.Source)
	}
	if alice.Labels["io.codebridge.principal"] != "token:alice" {
		t.Errorf("alice's workspace is labelled %v", alice.Labels)
	}
	if !claims(kube) {
		t.Error("the engine is not told that workspaces are claims")
	}

	local := &appSettings{}
	local.Sandbox.Engine, local.Workspace = "podman", kube.Workspace
	if of, err := httpWorkspaces(local); of != nil || err != nil || claims(local) {
		t.Errorf("a local engine's HTTP sessions are not ephemeral: %v", err)
	}
	kube.Workspace.Workspace, _ = parseWorkspace("shared")
	if _, err := httpWorkspaces(kube); err == nil {
		t.Error("a named workspace shared by every principal was accepted over HTTP")
	}
	kube.Workspace.Workspace, _ = parseWorkspace("ephemeral")
	if of, err := httpWorkspaces(kube); of != nil || err != nil || claims(kube) {
		t.Errorf("ephemeral: %v", err)
	}
	kube.Workspace.Workspace, _ = parseWorkspace(dir)
	if _, _, err := kube.Workspace.sandboxWorkspace(kube.Sandbox, kube.Upstream.Roots, host{}); err == nil {
		t.Error("a host directory was made a Pod's workspace")
	}
}
