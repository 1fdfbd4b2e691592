//go:build kubernetes

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine"
	"github.com/codebridge/codebridge/sandbox/engine/kube"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Replicas of one team bridge on the lab cluster, sharing nothing but
// the cluster: each an HTTP bridge process on loopback with the same
// tokens, run as the service account of deploy/kubernetes/rbac.yaml's
// Role, behind a loopback proxy that sends each request to a random live
// replica (no affinity). startReplicas and replicaProxy are the entry
// points for benchmarks too.

// startReplicas starts n replicas (teamBridge: alice's and bob's tokens,
// no warm pool), each acting as the bridge's Role, and a proxy in front
// of them.
func startReplicas(t *testing.T, n int) (replicas []*httpBridge, proxy *replicaProxy, aliceTok, bobTok string) {
	t.Helper()
	var role rbacv1.Role
	var rb rbacv1.RoleBinding
	readYAML(t, "rbac.yaml", &role, &rb)
	env := []string{"KUBECONFIG=" + accountKubeconfig(t, role.Rules)}
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	for range n {
		var r *httpBridge
		r, aliceTok, bobTok = teamBridge(t, h, env)
		replicas = append(replicas, r)
	}
	return replicas, newReplicaProxy(t, replicas), aliceTok, bobTok
}

// replicaProxy is a loopback reverse proxy that sends each request to a
// random live replica, and counts the run_python calls each one got.
type replicaProxy struct {
	url     string
	targets []*url.URL
	// routed receives the index of the replica each tools/call went to.
	routed chan int

	mu    sync.Mutex
	down  []bool
	calls []int
}

// newReplicaProxy serves the proxy of replicas until the test ends.
func newReplicaProxy(t *testing.T, replicas []*httpBridge) *replicaProxy {
	t.Helper()
	p := &replicaProxy{routed: make(chan int, 1000), down: make([]bool, len(replicas)), calls: make([]int, len(replicas))}
	for _, r := range replicas {
		u, err := url.Parse(r.url)
		if err != nil {
			t.Fatal(err)
		}
		p.targets = append(p.targets, u)
	}
	rp := &httputil.ReverseProxy{Rewrite: p.rewrite, FlushInterval: -1}
	srv := httptest.NewServer(rp) // 127.0.0.1
	t.Cleanup(srv.Close)
	p.url = srv.URL + p.targets[0].Path
	return p
}

// rewrite sends r to a random live replica.
func (p *replicaProxy) rewrite(r *httputil.ProxyRequest) {
	body, _ := io.ReadAll(r.In.Body)
	r.Out.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	var live []int
	for i, d := range p.down {
		if !d {
			live = append(live, i)
		}
	}
	i := live[rand.IntN(len(live))]
	call := bytes.Contains(body, []byte(`"tools/call"`))
	if call {
		p.calls[i]++
	}
	p.mu.Unlock()
	if call {
		p.routed <- i
	}
	r.Out.URL.Scheme, r.Out.URL.Host, r.Out.Host = p.targets[i].Scheme, p.targets[i].Host, p.targets[i].Host
}

// markDown stops sending requests to replica i (it died).
func (p *replicaProxy) markDown(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down[i] = true
}

// served is how many run_python calls each replica got.
func (p *replicaProxy) served() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.calls...)
}

// statelessAs connects a 2026-07-28 client through the proxy.
func (p *replicaProxy) statelessAs(t *testing.T, name, token string) *mcp.ClientSession {
	t.Helper()
	return (&httpBridge{t: t, url: p.url, stderr: &syncBuffer{}}).statelessAs(t, name, token, nil)
}

// handlePod is the one sandbox Pod of a handle that replicas made.
func handlePod(t *testing.T, replicas []*httpBridge) corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	for _, r := range replicas {
		for _, p := range bridgePods(t, r.cmd.Process.Pid) {
			if p.Labels[sandbox.LabelHandle] != "" && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
	}
	if len(pods) != 1 {
		t.Fatalf("%d sandbox Pods of handles made by the replicas, want one", len(pods))
	}
	return pods[0]
}

// inPod runs python code in the sandbox Pod pod through pods/exec, as an
// adopting replica reaches it, and returns what it printed.
func inPod(t *testing.T, pod, code string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := sandbox.Connect(ctx, engineOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctr, err := eng.(engine.Adopter).Exec(ctx, pod, []string{"python3", "-c", code})
	if err != nil {
		t.Fatal(err)
	}
	defer ctr.(engine.Detacher).Detach() // never Remove: that deletes the Pod
	_ = ctr.Stdin().Close()
	out, err := io.ReadAll(ctr.Stdout())
	if err != nil {
		t.Fatalf("reading an exec's output in Pod %s: %v", pod, err)
	}
	return string(out)
}

// waitInPod polls the Pod until path exists in it (a cell made it):
// polling the engine, not synchronising on time.
func waitInPod(t *testing.T, pod, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(inPod(t, pod, fmt.Sprintf("import os; print(os.path.exists(%q))", path)), "True") {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared in Pod %s", path, pod)
		}
		time.Sleep(100 * time.Millisecond) // polling the engine, not synchronising
	}
}

// TestKubernetesReplicasShareHandles: two replicas behind a proxy that
// routes each request at random; alice's 2026-07-28 client uses one
// handle. x += 1 across calls that land on both replicas keeps counting.
// The replica running a cell (it blocks on a file the test creates) is
// killed with SIGKILL after a tool call; the cell is let finish while no
// replica listens; the next call, on the survivor, waits for the dead
// replica's Lease to expire, takes the session over, says it survived and
// that the killed cell finished, sees what the cell set, and reads the
// killed cell's ledger (its tool call), which the sandbox kept: in the
// answer, and from runtime.calls() as the previous cell's. From the attacker's side:
// bob with alice's handle and a guessed handle get the same answer, word
// for word; the handle after its end says it was ended. No Pod and no
// Lease of the handle is left.
func TestKubernetesReplicasShareHandles(t *testing.T) {
	kubeOnly(t)
	replicas, proxy, aliceTok, bobTok := startReplicas(t, 2)
	alice := proxy.statelessAs(t, "alice", aliceTok)
	first := callHandle(t, alice, "x = 0\nprint('set')", "")
	h := first.handle
	if first.isError || h == "" {
		t.Fatalf("alice's first call:\n%s", first.text)
	}
	want := alternateReplicas(t, proxy, alice, h)
	pod := handlePod(t, replicas)
	digest := pod.Labels[sandbox.LabelHandle]

	survivor, died := killMidCell(t, replicas, proxy, alice, h, pod.Name)
	start := time.Now()
	got := callHandle(t, alice, "print(x, y)\n"+printCalls, h)
	if got.isError || !strings.Contains(got.text, fmt.Sprintf("%d %d", want, want*10)) ||
		!strings.Contains(got.text, "taken over") || !strings.Contains(got.text, "finished (ok)") {
		t.Fatalf("the call after replica %d was killed mid-cell:\n%s", died, got.text)
	}
	t.Logf("the first call after the death of the replica that ran the cell answered after %s (the Lease's expiry, then adoption)", time.Since(start).Round(time.Millisecond))
	// The ledger of the killed replica's cell, kept in the sandbox, is
	// readable on the survivor: in that answer, and as runtime.calls()'s
	// previous cell until the survivor ran one (the next call is that one).
	if !strings.Contains(got.text, "as the sandbox kept them: 1]\n  1 ok: stub.add") ||
		!strings.Contains(got.text, `"previous": {"total": 1, "calls": [{"seq": 1, "kind": "tool", "server": "stub", "tool": "add", "state": "ok"`) {
		t.Fatalf("the call after the death does not give the killed cell's ledger:\n%s", got.text)
	}

	bob := proxy.statelessAs(t, "bob", bobTok)
	stolen := callHandle(t, bob, "x = 'bob was here'\nprint(x)", h)
	guessed := callHandle(t, bob, "print(1)", "cbs_"+strings.Repeat("a", 26))
	if !stolen.isError || stolen.text != guessed.text || !strings.Contains(stolen.text, "knows no session with this handle") {
		t.Fatalf("bob with alice's handle:\n%s\n--- a guessed handle:\n%s", stolen.text, guessed.text)
	}
	old := replicas[survivor].clientAs(t, "alice-old", aliceTok) // the survivor holds the session now
	mustContain(t, old.ok("print(await runtime.end_session("+strconvQuote(h)+"))"), "{'ended': True}")
	if ended := callHandle(t, alice, "print(x)", h); !ended.isError || !strings.Contains(ended.text, "was ended") {
		t.Fatalf("alice's ended handle:\n%s", ended.text)
	}
	noPodNoLease(t, pod.Name, digest)
}

// alternateReplicas adds 1 to x in handle h until both replicas served
// at least two of the calls (at least six calls), checking the count
// each time; it returns x.
func alternateReplicas(t *testing.T, proxy *replicaProxy, alice *mcp.ClientSession, h string) int {
	t.Helper()
	x, last := 0, <-proxy.routed // the first call's
	var took [2]time.Duration    // calls on the replica of the call before, and on the other
	var n [2]int
	for calls := 1; ; calls++ {
		x++
		start := time.Now()
		got := callHandle(t, alice, "x += 1\nprint('x is', x)", h)
		if got.isError || !strings.Contains(got.text, fmt.Sprintf("x is %d", x)) {
			t.Fatalf("call %d (served so far: %v):\n%s", calls, proxy.served(), got.text)
		}
		i := <-proxy.routed
		moved := 0
		if i != last {
			moved = 1
		}
		took[moved] += time.Since(start)
		n[moved]++
		last = i
		s := proxy.served()
		if calls >= 6 && s[0] >= 2 && s[1] >= 2 {
			t.Logf("x counted to %d over %d calls, served %v by the replicas; a call took %s on average on the replica of the call before (%d calls), %s on the other (%d calls: it takes the session over)",
				x, calls, s, avg(took[0], n[0]), n[0], avg(took[1], n[1]), n[1])
			return x
		}
		if calls == 60 {
			t.Fatalf("60 calls and the random proxy did not spread them: %v", s)
		}
	}
}

// avg is d over n, rounded to the millisecond.
func avg(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return (d / time.Duration(n)).Round(time.Millisecond)
}

// killMidCell starts a cell in h that sets y = x * 10 once a file the
// test creates exists, kills the replica it runs on (SIGKILL) once it
// runs, lets the cell finish while no replica listens, and returns the
// surviving replica and the dead one. The call in flight fails.
func killMidCell(t *testing.T, replicas []*httpBridge, proxy *replicaProxy, alice *mcp.ClientSession, h, pod string) (survivor, died int) {
	t.Helper()
	for len(proxy.routed) > 0 {
		<-proxy.routed
	}
	inFlight := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		code := "import os, time\nawait mcp_stub.add(a=1, b=2)\nopen('/tmp/started', 'w').close()\n" +
			"while not os.path.exists('/tmp/release'):\n    time.sleep(0.05)\ny = x * 10\nprint('cell done')"
		res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "session": h}})
		if err == nil && !res.IsError {
			err = fmt.Errorf("the call in flight on the killed replica succeeded: %v", res.Content)
		}
		inFlight <- err
	}()
	died = <-proxy.routed
	waitInPod(t, pod, "/tmp/started")
	proxy.markDown(died)
	replicas[died].stop(syscall.SIGKILL)
	t.Logf("the call in flight on the killed replica %d: %v", died, <-inFlight)
	inPod(t, pod, "open('/tmp/release', 'w').close()")
	waitInPod(t, pod, "/tmp/release")
	return 1 - died, died
}

// noPodNoLease checks, as the cluster's admin, that the handle's Pod is
// gone (waiting for its deletion to finish) and that no Lease of the
// handle is left.
func noPodNoLease(t *testing.T, pod, digest string) {
	t.Helper()
	cs, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err = cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended handle's Pod %s is left: %v", pod, err)
		}
		time.Sleep(200 * time.Millisecond) // polling the cluster, not synchronising
	}
	leases, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelHandle + "=" + digest})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 0 {
		t.Fatalf("%d Lease(s) of the ended handle left (%s)", len(leases.Items), kube.LeaseName(digest))
	}
}
