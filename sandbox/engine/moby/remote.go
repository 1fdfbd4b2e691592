package moby

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/procgroup"
	"github.com/moby/moby/client"
)

// engineOpts are the client options for an engine address. A tcp://
// address uses TLS when DOCKER_CERT_PATH names the client certificates
// (and verifies the engine's with DOCKER_TLS_VERIFY), as Docker's own
// client does. An ssh://[user@]host[:port] address runs
// `ssh host <engine> system dial-stdio` per connection, which Docker and
// Podman both answer: nothing on the remote machine listens on the
// network, and nothing is mounted from this one.
func engineOpts(kind, host string) []client.Opt {
	switch {
	case strings.HasPrefix(host, "tcp://"):
		return []client.Opt{client.WithHost(host), client.WithTLSClientConfigFromEnv()}
	case strings.HasPrefix(host, "ssh://"):
		return []client.Opt{client.WithHost("http://remote-engine"), client.WithDialContext(sshDialer(kind, host))}
	}
	return []client.Opt{client.WithHost(host)}
}

// sshCommand is the ssh program; tests replace it.
var sshCommand = "ssh"

// sshDialer returns a dialer that reaches the engine at an ssh:// address
// through the ssh client, which brings the user's keys, agent and
// known_hosts.
func sshDialer(kind, host string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		u, err := url.Parse(host)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("%q is not ssh://[user@]host[:port]", host)
		}
		args := []string{"-o", "BatchMode=yes"}
		if u.User != nil {
			args = append(args, "-l", u.User.Username())
		}
		if u.Port() != "" {
			args = append(args, "-p", u.Port())
		}
		engine := "docker"
		if kind == "podman" {
			engine = "podman"
		}
		args = append(args, "--", u.Hostname(), engine, "system", "dial-stdio")
		cmd := exec.Command(sshCommand, args...)
		procgroup.Prepare(cmd)
		c := &cmdConn{cmd: cmd}
		if c.w, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if c.r, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting ssh to reach the engine at %s: %w", host, err)
		}
		return c, nil
	}
}

// cmdConn is a connection over a command's stdin and stdout.
type cmdConn struct {
	cmd  *exec.Cmd
	r    io.ReadCloser
	w    io.WriteCloser
	once sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *cmdConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// CloseWrite ends the command's stdin (the engine sees EOF).
func (c *cmdConn) CloseWrite() error { return c.w.Close() }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		_ = c.w.Close()
		procgroup.Kill(c.cmd)
		_ = c.cmd.Wait()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr              { return sshAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr             { return sshAddr{} }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

type sshAddr struct{}

func (sshAddr) Network() string { return "ssh" }
func (sshAddr) String() string  { return "ssh" }
