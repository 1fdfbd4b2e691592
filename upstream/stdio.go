package upstream

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/procgroup"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// process is a stdio upstream's process group.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returns
}

// startProcess starts spec's command in its own process group and returns
// a transport over its stdin and stdout. The go-sdk's CommandTransport caps
// a message at 16 MiB; this one allows maxMessage bytes, so that large
// tool results (a 64 MiB file) get through.
func startProcess(spec discovery.Server, stderr io.Writer, maxMessage int) (*process, mcp.Transport, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Dir = spec.Cwd
	cmd.Env = os.Environ()
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = stderr
	procgroup.Prepare(cmd)
	// A child that inherited the server's stderr must not keep Wait (and
	// so crash detection) hanging after the server itself has exited.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %q: %w", spec.Command, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		// The server is gone, crashed or not: whatever it started goes too.
		procgroup.Kill(cmd)
		close(p.exited)
	}()
	return p, &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: maxMessage}, nil
}

// stop ends the process group: the server has had its stdin closed (the
// MCP way to ask it to exit); after grace it gets SIGTERM, then SIGKILL,
// and so do the children it started (npx -> node).
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	procgroup.Stop(p.cmd, grace, p.exited)
}
