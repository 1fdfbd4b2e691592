package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netns is a network namespace this test made, joined to the host by a
// veth pair: the host side is 10.213.N.1, the namespace side 10.213.N.2.
type netns struct {
	name, hostIP, nsIP string
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		unprivilegedSkip(t, "network namespaces need root")
	}
	needTool(t, "ip", "iproute2")
	n := os.Getpid() % 250
	ns := &netns{name: fmt.Sprintf("cbtest%d", n), hostIP: fmt.Sprintf("10.213.%d.1", n), nsIP: fmt.Sprintf("10.213.%d.2", n)}
	host, peer := fmt.Sprintf("cbh%d", n), fmt.Sprintf("cbn%d", n)
	ipCmd(t, "netns", "add", ns.name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns.name).Run() }) // takes the veth pair with it
	ipCmd(t, "link", "add", host, "type", "veth", "peer", "name", peer)
	ipCmd(t, "link", "set", peer, "netns", ns.name)
	ipCmd(t, "addr", "add", ns.hostIP+"/30", "dev", host)
	ipCmd(t, "link", "set", host, "up")
	ipCmd(t, "-n", ns.name, "addr", "add", ns.nsIP+"/30", "dev", peer)
	ipCmd(t, "-n", ns.name, "link", "set", peer, "up")
	ipCmd(t, "-n", ns.name, "link", "set", "lo", "up")
	return ns
}

// TestRemoteEngine: the bridge runs its sandboxes on a Podman API service
// reached over TCP at an address of a network namespace the test made
// (nothing from the bridge's host is mounted into them); after a SIGKILL
// of the bridge, the next bridge removes the container it left there.
func TestRemoteEngine(t *testing.T) {
	localEngineOnly(t, "a Docker-API engine reached over TCP")
	needEnv(t)
	needTool(t, "podman", "podman")
	needTool(t, "nsenter", "util-linux")
	ns := newNetns(t)
	addr := net.JoinHostPort(ns.nsIP, "2375")
	// nsenter, not `ip netns exec`: that one also mounts a sysfs of its
	// own, which hides the cgroup file system from Podman.
	svc := exec.Command("nsenter", "--net=/run/netns/"+ns.name, "podman", "system", "service", "--time=0", "tcp://"+addr)
	svcLog := &syncBuffer{}
	svc.Stderr = svcLog
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("podman service:\n%s", svcLog)
		}
	})
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Process.Kill(); _ = svc.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Podman service in %s never listened on %s: %v", ns.name, addr, err)
		}
		time.Sleep(100 * time.Millisecond) // polling a service another process starts
	}

	// The bridges, and this test's own look at their containers, use the
	// engine in the namespace (whatever engine the suite runs against).
	t.Setenv("DOCKER_HOST", "tcp://"+addr)
	t.Setenv("CODEBRIDGE_ENGINE", "auto")
	env := []string{"DOCKER_HOST=tcp://" + addr, "CODEBRIDGE_ENGINE=auto"}
	h := home(t, nil)
	first := startBridge(t, h, env...)
	out := first.ok("import socket\nprint(sorted(n for _, n in socket.if_nameindex()))")
	if out != "['lo']\n" {
		t.Fatalf("the remote sandbox has interfaces %q", out)
	}
	mustContain(t, first.stderr.String(), "tcp://"+addr)
	left := containersOf(t, first.pid)
	if len(left) != 1 {
		t.Fatalf("%d containers for the first bridge", len(left))
	}
	first.kill(syscall.SIGKILL)
	if n := len(containersOf(t, first.pid)); n != 1 {
		t.Fatalf("after SIGKILL the first bridge has %d containers, want its 1 left behind", n)
	}
	second := startBridge(t, h, env...)
	second.ok("print(2)")
	if n := len(containersOf(t, first.pid)); n != 0 {
		t.Fatalf("the next bridge left %d containers of the killed one", n)
	}
	mustContain(t, second.stderr.String(), "removed a container left by a bridge that is gone")

	// The same engine behind TLS with client certificates, as Docker's
	// tcp://…:2376 is: the bridge reaches it with DOCKER_TLS_VERIFY and
	// DOCKER_CERT_PATH, attach included; without its certificate it is
	// refused and says what to do.
	t.Run("tls", func(t *testing.T) {
		tlsAddr := net.JoinHostPort(ns.hostIP, "2376")
		certs := engineTLS(t, tlsAddr, addr)
		tlsEnv := []string{"DOCKER_HOST=tcp://" + tlsAddr, "CODEBRIDGE_ENGINE=auto", "DOCKER_TLS_VERIFY=1"}
		b := startBridge(t, h, append(tlsEnv, "DOCKER_CERT_PATH="+certs)...)
		if got := b.ok("print(sum(range(10)))"); got != "45\n" {
			t.Fatalf("through TLS: %q", got)
		}
		mustContain(t, b.stderr.String(), "tcp://"+tlsAddr)
		out, errOut, code := cli(t, h, "print(1)", tlsEnv, "exec", "-")
		errOut += out
		if code == 0 || !strings.Contains(errOut, "does not answer") || !strings.Contains(errOut, tlsAddr) ||
			!strings.Contains(errOut, "set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH") {
			t.Fatalf("without a client certificate: exit %d\n%s", code, errOut)
		}
	})
}
