package moby_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine/moby"
)

// TestSSHEngine reaches the local Podman through an ssh:// address, with
// a stand-in for ssh that runs the remote command here (as sshd would
// on the engine's machine): ping, create, attach and remove all travel
// over `podman system dial-stdio`.
func TestSSHEngine(t *testing.T) {
	image := os.Getenv("CODEBRIDGE_TEST_IMAGE")
	if image == "" {
		image = "localhost/codebridge-python:bookworm"
	}
	if _, err := exec.LookPath("podman"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs rootful podman")
	}
	if err := exec.Command("podman", "image", "exists", image).Run(); err != nil {
		t.Skipf("image %s is missing", image)
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "ssh")
	log := filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift 2\nexec \"$@\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	defer moby.SetSSHCommand(fake)()
	env := map[string]string{"CONTAINER_HOST": "ssh://tester@engine.invalid:2222"}
	m := sandbox.NewManager(sandbox.EngineOptions{Getenv: func(k string) string { return env[k] }})
	defer m.Close()
	s := m.NewSession(sandbox.Config{Image: image}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, sandbox.Request{Code: "1 + 1", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != "2" {
		t.Fatalf("the cell gave %+v", res)
	}
	_ = s.Close()
	args, _ := os.ReadFile(log)
	if want := "-o BatchMode=yes -l tester -p 2222 -- engine.invalid podman system dial-stdio\n"; string(args[:len(want)]) != want {
		t.Fatalf("ssh ran with %q", args)
	}
}
