package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStatePersists(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok("x = 41")
	if got := b.ok("print(x + 1)"); strings.TrimSpace(got) != "42" {
		t.Fatalf("second call printed %q, want 42", got)
	}
	// Imports, functions and files persist too.
	b.ok("import json\ndef f(v): return v * 2\nopen('/workspace/note.txt', 'w').write('kept')")
	mustContain(t, b.ok("print(json.dumps(f(21)), open('/workspace/note.txt').read())"), "42 kept")
}

func TestHardening(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	cases := []struct {
		name, code, want string
	}{
		{"read-only root", `
try:
    open("/evil", "w")
    print("wrote")
except OSError as e:
    print("denied:", e.errno)`, "denied:"},
		{"not root", `import os; print("uid", os.getuid())`, "uid 65534"},
		{"tmp writable", `open("/tmp/t", "w").write("ok"); print(open("/tmp/t").read())`, "ok"},
		{"no capabilities", `print([l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1])`, "0000000000000000"},
		{"no new privileges", `print([l for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0].split()[1])`, "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := b.ok(c.code)
			mustContain(t, got, c.want)
		})
	}
}

// The sandbox has no network: its only interface is loopback, and a
// connection to the port of a listener on the host's loopback reaches
// nothing. Nothing is sent anywhere but to the sandbox's own loopback.
func TestNoNetwork(t *testing.T) {
	needEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	b := startBridge(t, home(t, nil))
	got := b.ok(fmt.Sprintf(`
import json, socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=5).close()
    result = "connected"
except OSError as e:
    result = "failed: " + type(e).__name__
print(json.dumps({"interfaces": sorted(n for _, n in socket.if_nameindex()), "connect": result}))`, port))
	var probe struct {
		Interfaces []string
		Connect    string
	}
	if err := json.Unmarshal([]byte(got), &probe); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	// A Pod always has the cluster network's interface: there, what
	// closes it is the NetworkPolicy of deploy/kubernetes/, enforced by
	// the network plugin; the connection below must fail all the same.
	if len(probe.Interfaces) != 1 || probe.Interfaces[0] != "lo" {
		if !onKubernetes() || len(probe.Interfaces) != 2 || probe.Interfaces[0] != "eth0" {
			t.Errorf("the sandbox has interfaces %v, want only lo", probe.Interfaces)
		}
	}
	if !strings.HasPrefix(probe.Connect, "failed") {
		t.Errorf("connecting to the host's loopback port: %s", probe.Connect)
	}
	if pendingConnection(t, ln) {
		t.Error("the host's listener received a connection from the sandbox")
	}
}

// pendingConnection reports whether a connection waits to be accepted on
// ln, without waiting: a completed handshake sits in the listen backlog.
func pendingConnection(t *testing.T, ln net.Listener) bool {
	t.Helper()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var accepted bool
	var acceptErr error
	err = rc.Control(func(fd uintptr) {
		nfd, _, aerr := syscall.Accept(int(fd)) // the fd is non-blocking: EAGAIN when none waits
		if aerr == nil {
			syscall.Close(nfd)
			accepted = true
		} else if aerr != syscall.EAGAIN {
			acceptErr = aerr
		}
	})
	if err != nil || acceptErr != nil {
		t.Fatalf("checking the listener: %v %v", err, acceptErr)
	}
	return accepted
}

func TestTimeoutInterruptsAndKeepsState(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok("before = 'still here'")
	r := b.run("import time\nprint('sleeping')\ntime.sleep(60)", "timeout", 2)
	if !r.isError {
		t.Fatalf("a timed-out call is not an error:\n%s", r.text)
	}
	mustContain(t, r.text, "sleeping", "[status: timeout", "variables and imports were kept")
	mustContain(t, b.ok("print(before)"), "still here")
}

func TestTimeoutRestartsWhenCodeWillNotStop(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok("lost = 1")
	code := `
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    time.sleep(0.1)`
	r := b.run(code, "timeout", 1)
	mustContain(t, r.text, "[status: timeout", "restarted", "gone")
	// The next call works, in a fresh sandbox.
	mustContain(t, b.ok("print('lost' in globals())"), "False")
}

func TestErrorsShowUserTraceback(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	r := b.run("def boom():\n    raise ValueError('bad value')\nboom()")
	if !r.isError {
		t.Fatalf("an exception is not an error:\n%s", r.text)
	}
	mustContain(t, r.text, "ValueError: bad value", "boom()", "[status: error]")
	if strings.Contains(r.text, "_executor") || strings.Contains(r.text, "runtime.zip") {
		t.Fatalf("the traceback shows runtime internals:\n%s", r.text)
	}
}

func TestOutputOrderAndValue(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	got := b.ok("import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7")
	mustContain(t, got, "out", "[stderr]\nerr", "42")
	if strings.Index(got, "out") > strings.Index(got, "err") {
		t.Fatalf("stdout does not come before stderr:\n%s", got)
	}
}

func TestBadInput(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"stub": stub()}}))
	cases := []struct {
		name  string
		code  string
		extra []any
		want  string
	}{
		{"empty code", "", nil, "`code` is empty"},
		{"negative timeout", "print(1)", []any{"timeout", -1}, "`timeout` must be a positive"},
		{"unknown server", "print(1)", []any{"servers", []string{"nope"}}, `no MCP server "nope" is configured; configured servers: stub`},
		{"syntax error", "def (:", nil, "SyntaxError"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(c.code, c.extra...)
			if !r.isError {
				t.Fatalf("not an error:\n%s", r.text)
			}
			mustContain(t, r.text, c.want)
		})
	}
	// Timeouts above the maximum are capped, not refused.
	mustContain(t, b.ok("print('capped')", "timeout", 100000), "capped")
}

func TestProxyCalls(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the host"), 0o644))
	b := startBridge(t, home(t, map[string]map[string]server{"servers.json": {
		"stub":       stub(),
		"everything": npmServer("mcp-server-everything"),
	}}))

	t.Run("stub", func(t *testing.T) {
		mustContain(t, b.ok(`print(await mcp_stub.echo(message="hi there"))`), "hi there")
		mustContain(t, b.ok(`print(await runtime.call_tool("stub", "add", {"a": 2, "b": 40}))`), "42")
		mustContain(t, b.ok(`print(await call_tool("stub", "add", {"a": 1, "b": 1}))`), "2")
	})
	t.Run("everything", func(t *testing.T) {
		mustContain(t, b.ok(`print(await mcp_everything.echo(message="ping"))`), "ping")
		mustContain(t, b.ok(`print(await mcp_everything.get_sum(a=20, b=22))`), "42")
		mustContain(t, b.ok(`print(await call_tool("everything", "get-sum", {"a": 1, "b": 2}))`), "3")
	})
	t.Run("servers warm", func(t *testing.T) {
		got := b.ok(`print(sorted((s["name"], s["running"]) for s in runtime.list_servers_sync(detailed=True)))`)
		mustContain(t, got, "('everything', True)", "('stub', True)")
	})
	t.Run("gather 50", func(t *testing.T) {
		code := `
import asyncio
res = await asyncio.gather(*[mcp_everything.get_sum(a=i, b=1000) for i in range(50)])
want = [str(i + 1000) for i in range(50)]
got = [str(r).strip() for r in res]
print("match" if all(w in g for w, g in zip(want, got)) else ("mismatch", got[:5]), len(res))`
		mustContain(t, b.ok(code), "match 50")
	})
	t.Run("gather 50 stub", func(t *testing.T) {
		code := `
import asyncio
res = await asyncio.gather(*[mcp_stub.echo(message=f"m{i}") for i in range(50)])
print(res == [f"m{i}" for i in range(50)])`
		mustContain(t, b.ok(code), "True")
	})
	t.Run("tool error", func(t *testing.T) {
		code := `
try:
    await mcp_stub.fail(message="upstream said no")
except ToolError as e:
    print("caught:", e)`
		mustContain(t, b.ok(code), "caught:", "upstream said no")
	})
	t.Run("unknown server", func(t *testing.T) {
		r := b.run(`await call_tool("nope", "x", {})`)
		mustContain(t, r.text, `no MCP server "nope"`)
	})
}

func TestInitializeOnlyUpstream(t *testing.T) {
	needEnv(t)
	// --strict makes the stub exit on any method but initialize, tools/*
	// and ping, as older servers do on server/discover.
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"old": stub("--strict")}}))
	mustContain(t, b.ok(`print(await mcp_old.echo(message="still speaks initialize"))`), "still speaks initialize")
}

func TestServersArgumentStartsFirst(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": stub()}}))
	got := b.ok(`print([s["running"] for s in runtime.list_servers_sync(detailed=True)])`, "servers", []string{"stub"})
	mustContain(t, got, "[True]")
}

func TestDiscoveryFromHome(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{
		"10-first.json":  {"alpha": stub("--name=alpha"), "shared": stub("--name=first")},
		"20-second.json": {"beta": stub("--name=beta"), "shared": stub("--name=second"), "me": {Command: binary}},
	})
	must(t, os.WriteFile(filepath.Join(h, "MCPs", "15-broken.json"), []byte("{not json"), 0o644))
	b := startBridge(t, h)
	got := b.ok(`print(runtime.discovered_servers())`)
	mustContain(t, got, "alpha", "shared", "beta")
	if strings.Contains(got, "'me'") {
		t.Fatalf("the self-referencing entry was loaded: %s", got)
	}
	// The first definition of a duplicate wins.
	mustContain(t, b.ok(`print(await mcp_shared.echo(message="x"), (await runtime.list_tools("shared"))[0]["name"])`), "x")
	logs := b.stderr.String()
	mustContain(t, logs, "15-broken.json", "shared", "20-second.json")
	if !strings.Contains(logs, "itself") {
		t.Fatalf("the self-reference was not reported:\n%s", logs)
	}
}

func TestNoContainerOutlivesTheBridge(t *testing.T) {
	needEnv(t)
	for _, how := range []string{"stdin EOF", "SIGTERM", "SIGINT"} {
		t.Run(how, func(t *testing.T) {
			b := startBridge(t, home(t, nil))
			b.ok("print(1)")
			if n := len(containersOf(t, b.pid)); n != 1 {
				t.Fatalf("the bridge has %d containers, want 1", n)
			}
			switch how {
			case "stdin EOF":
				b.close()
			case "SIGTERM":
				b.kill(syscall.SIGTERM)
			case "SIGINT":
				b.kill(syscall.SIGINT)
			}
			if left := containersOf(t, b.pid); len(left) != 0 {
				t.Fatalf("%d container(s) remain after %s: %v\nstderr:\n%s", len(left), how, left, b.stderr)
			}
		})
	}
}

func TestKilledBridgeContainerRemovedAtNextStart(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	b := startBridge(t, h)
	b.ok("print(1)")
	b.kill(syscall.SIGKILL)
	if n := len(containersOf(t, b.pid)); n != 1 {
		t.Fatalf("after SIGKILL %d containers of the bridge exist; the test needs the one it left", n)
	}
	b2 := startBridge(t, h)
	b2.ok("print(2)")
	if left := containersOf(t, b.pid); len(left) != 0 {
		t.Fatalf("the killed bridge's container was not removed by the next bridge: %v\nstderr:\n%s", left, b2.stderr)
	}
	mustContain(t, b2.stderr.String(), "removed")
}
