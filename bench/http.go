package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpBridge is codebridge serving streamable HTTP on a loopback port.
type httpBridge struct {
	cmd    *exec.Cmd
	url    string // the MCP endpoint
	base   string // scheme://host:port
	stderr *tailBuffer
}

var servingURL = regexp.MustCompile(`msg="serving MCP over HTTP" url=(\S+)`)

// startHTTPBridge starts `codebridge serve --http 127.0.0.1:0` with args.
func (e *env) startHTTPBridge(args ...string) (*httpBridge, error) {
	cmd := exec.Command(e.bin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+e.home, "CODEBRIDGE_IMAGE="+e.image)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	b := &httpBridge{cmd: cmd, stderr: &tailBuffer{max: 64 << 10}}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			fmt.Fprintln(b.stderr, sc.Text())
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		_, _ = io.Copy(b.stderr, pipe)
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("codebridge did not serve HTTP:\n%s", b.stderr)
		}
		b.url, b.base = u, strings.TrimSuffix(u, "/mcp")
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("codebridge did not serve HTTP within a minute:\n%s", b.stderr)
	}
	return b, nil
}

func (b *httpBridge) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	_ = b.cmd.Wait()
}

// session opens one MCP session.
func (b *httpBridge) session(ctx context.Context) (*bridge, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "codebridge-bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting over HTTP: %w\nstderr:\n%s", err, b.stderr)
	}
	return &bridge{cs: cs, pid: b.cmd.Process.Pid, stderr: b.stderr}, nil
}

// warmReady waits until the warm pool holds n sandboxes, reading
// /metrics.
func (b *httpBridge) warmReady(ctx context.Context, n int) error {
	want := fmt.Sprintf("codebridge_warm_sandboxes %d\n", n)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(b.base + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), want) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("the warm pool did not refill to %d within a minute", n)
}

// firstResults opens sessions one after another and times each from
// connecting to its first print(1) result; with warm > 0 each waits for
// the pool to be full first.
func (e *env) firstResults(ctx context.Context, warm int) (sample, error) {
	b, err := e.startHTTPBridge("--warm", fmt.Sprint(warm))
	if err != nil {
		return nil, err
	}
	defer b.stop()
	var s sample
	for range e.coldRuns {
		if warm > 0 {
			if err := b.warmReady(ctx, warm); err != nil {
				return nil, err
			}
		}
		start := time.Now()
		sess, err := b.session(ctx)
		if err != nil {
			return nil, err
		}
		out, err := sess.run(ctx, "print(1)")
		s = append(s, time.Since(start).Seconds())
		sess.close()
		if err != nil || strings.TrimSpace(out) != "1" {
			return nil, fmt.Errorf("first result %q: %w", out, err)
		}
	}
	return s, nil
}

// idlePerSession is the bridge's RSS growth per idle session that has a
// sandbox, over sessions sessions.
func (e *env) idlePerSession(ctx context.Context, sessions int) (float64, error) {
	b, err := e.startHTTPBridge("--warm", "0")
	if err != nil {
		return 0, err
	}
	defer b.stop()
	one, err := b.session(ctx)
	if err != nil {
		return 0, err
	}
	if _, err = one.run(ctx, "print(1)"); err != nil {
		return 0, err
	}
	base, err := idleRSS(b.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	for range sessions {
		var s *bridge
		if s, err = b.session(ctx); err != nil {
			return 0, err
		}
		if _, err = s.run(ctx, "x = 1"); err != nil {
			return 0, err
		}
	}
	after, err := idleRSS(b.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return (after - base) / float64(sessions), nil
}

// proxiedRate is the rate of proxied calls to the everything server with
// n sessions each gathering calls at once.
func (e *env) proxiedRate(ctx context.Context, cfg string, n int) (float64, error) {
	b, err := e.startHTTPBridge("--warm", "0", "--config", cfg)
	if err != nil {
		return 0, err
	}
	defer b.stop()
	sessions := make([]*bridge, n)
	for i := range sessions {
		if sessions[i], err = b.session(ctx); err != nil {
			return 0, err
		}
	}
	per := e.calls / 2
	code := fmt.Sprintf("import asyncio\nr = await asyncio.gather(*(mcp_everything.echo(message='x') for _ in range(%d)))\nprint(len(r))", per)
	for _, s := range sessions { // one untimed round: the first gather of a session is slower
		if _, err := s.run(ctx, code); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range sessions {
		wg.Go(func() {
			out, err := s.run(ctx, code)
			if err == nil && strings.TrimSpace(out) != fmt.Sprint(per) {
				err = fmt.Errorf("gathered %q calls, want %d", out, per)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(n*per) / took.Seconds(), nil
}

// measureHTTP measures serving HTTP: a new session's first result (cold,
// and from the warm pool), the bridge's RSS per idle session, and
// proxied calls per second with one session and with ten at once.
func (e *env) measureHTTP(ctx context.Context) ([]row, error) {
	cold, err := e.firstResults(ctx, 0)
	if err != nil {
		return nil, err
	}
	warm, err := e.firstResults(ctx, 2)
	if err != nil {
		return nil, err
	}
	perSession, err := e.idlePerSession(ctx, 10)
	if err != nil {
		return nil, err
	}
	cfg, err := e.writeConfig("http.json", map[string]server{"everything": e.everything()})
	if err != nil {
		return nil, err
	}
	one, err := e.proxiedRate(ctx, cfg, 1)
	if err != nil {
		return nil, err
	}
	ten, err := e.proxiedRate(ctx, cfg, 10)
	if err != nil {
		return nil, err
	}
	return []row{
		{name: "HTTP: new session to first `print(1)`, cold (container created)", value: fmtSeconds(cold.median()),
			spread: spread(cold, fmtSeconds) + fmt.Sprintf(", %d sessions", len(cold)), info: true},
		{name: "HTTP: new session to first `print(1)`, from the warm pool", value: fmtSeconds(warm.median()),
			spread: spread(warm, fmtSeconds) + fmt.Sprintf(", %d sessions", len(warm)), target: "≤ 50 ms", ok: warm.median() <= 0.05},
		{name: "HTTP: bridge RSS per idle session with a sandbox", value: fmtBytes(perSession),
			spread: "10 sessions over one", target: "≤ 3 MB", ok: perSession <= 3e6},
		{name: "HTTP: proxied calls/s, one session", value: fmtRate(one), spread: fmt.Sprintf("%d gathered calls", e.calls/2), info: true},
		{name: "HTTP: proxied calls/s, ten sessions at once", value: fmtRate(ten), spread: fmt.Sprintf("%.1fx one session", ten/one), info: true},
	}, nil
}
