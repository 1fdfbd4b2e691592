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
// a transport over its stdin and stdout that allows messages of maxMessage
// bytes (a 64 MiB file) and passes tool results through undecoded (into
// the slots of the tool calls in calls).
func startProcess(spec discovery.Server, stderr io.Writer, maxMessage int, calls *callWatchers) (*process, mcp.Transport, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Dir = spec.Cwd
	cmd.Env = upstreamEnv(os.Environ(), spec.Env)
	cmd.Stderr = stderr
	procgroup.Prepare(cmd)
	// A child that inherited the server's stderr must not keep Wait (and
	// so crash detection) hanging after the server itself has exited.
	cmd.WaitDelay = time.Second
	// Plain pipes rather than cmd.StdinPipe/StdoutPipe: cmd.Wait closes
	// those as soon as the process exits, and it runs here alongside the
	// reads, which then fail with "file already closed" instead of EOF.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close() // the child's ends
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, fmt.Errorf("%w %q: %w", errStartCommand, spec.Command, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		// The server is gone, crashed or not: whatever it started goes too.
		procgroup.Kill(cmd)
		close(p.exited)
	}()
	return p, &lineTransport{r: outR, w: inW, maxMessage: maxMessage, calls: calls}, nil
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
