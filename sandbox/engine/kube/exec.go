//go:build kubernetes

package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// The runtime of a sandbox Pod runs as a command the bridge starts in
// the Pod's container through pods/exec: its stdin, stdout (the frames)
// and stderr travel on the exec stream, which the kubelet does not log.
// The container's main process is a minimal init that prints nothing
// (kubeInitSource), so nothing of the sandbox's lands in the node's
// container log.

// executor is the exec subresource's stream for command, with its stdin
// when asked: WebSocket first, SPDY when the API server (or a proxy on
// the way) cannot upgrade to it.
func (c *kubeContainer) executor(command []string, stdin bool) (remotecommand.Executor, error) {
	e := c.engine
	u := restPods{c: e.rest, ns: e.ns}.execURL(c.name, &corev1.PodExecOptions{
		Container: sandboxContainer, Command: command, Stdin: stdin, Stdout: true, Stderr: true,
	})
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// exec starts the runtime's command in the Pod. The stream lives until
// the command ends or [kubeContainer.Remove]; what the runtime writes to
// stderr before it runs code (its failures to start) goes to the log,
// within its budget; how it ended is kept for Exited.
func (c *kubeContainer) exec(command []string) error {
	ex, err := c.executor(command, true)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c.stdin, c.stdout = inW, outR
	c.streamDone = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: c.stderr})
		c.stderr.Close()
		c.streamErr = err
		close(c.streamDone)
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	return nil
}

// runtimeExit waits at most wait for the runtime's exec stream to end
// and returns its exit code, as the container runtime reported it on
// the stream (a signal's kill is 128 + its number); ok is false when the
// stream ended without a status (the connection broke) or has not
// ended.
func (c *kubeContainer) runtimeExit(ctx context.Context, wait time.Duration) (code int, ok bool) {
	if c.streamDone == nil {
		return 0, false
	}
	select {
	case <-c.streamDone:
	case <-time.After(wait):
		return 0, false
	case <-ctx.Done():
		return 0, false
	}
	var exit exec.ExitError
	switch {
	case c.streamErr == nil:
		return 0, true
	case errors.As(c.streamErr, &exit):
		return exit.ExitStatus(), true
	}
	return 0, false
}

// kubeOOMReadLimit bounds what the out-of-memory count's command may
// print.
const kubeOOMReadLimit = 64

// oomKilled asks the Pod's memory cgroup, with a command of its own
// started in the Pod, whether its out-of-memory killer killed a process
// since the runtime started (the start check's count); known is false
// when either count is missing.
func (c *kubeContainer) oomKilled(ctx context.Context) (oom, known bool) {
	if c.oomKills < 0 {
		return false, false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := c.output(ctx, []string{"python3", "-I", "-c", kubeOOMSource + "print(_oom_kills())"}, kubeOOMReadLimit)
	if err != nil {
		c.engine.log.Debug("reading the sandbox Pod's out-of-memory count", "pod", c.name, "err", err)
		return false, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return false, false
	}
	return n > c.oomKills, true
}

// output runs command in the Pod and returns at most limit bytes of what
// it prints on stdout.
func (c *kubeContainer) output(ctx context.Context, command []string, limit int) (string, error) {
	ex, err := c.executor(command, false)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	w := &limitedWriter{w: &out, left: limit}
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: w, Stderr: io.Discard}); err != nil {
		return "", fmt.Errorf("%s in Pod %s: %w", command[0], c.name, err)
	}
	return out.String(), nil
}

// limitedWriter keeps the first left bytes written to it and drops the
// rest.
type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if keep := min(len(p), l.left); keep > 0 {
		l.left -= keep
		if _, err := l.w.Write(p[:keep]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
