//go:build kubernetes

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/codebridge/codebridge/sandbox"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the kubernetes engine checks of the cluster before it runs code:
// the seccomp filter of each new Pod (from inside it), the namespace's
// network policy, the pids limit.

// ioUringProbe tries io_uring_setup from inside the sandbox.
const ioUringProbe = `import ctypes, errno
r = ctypes.CDLL(None, use_errno=True).syscall(425, 1, ctypes.create_string_buffer(120))
print("io_uring_setup", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])`

// installWeakProfile writes, on the lab's node, codebridge's seccomp
// profile with io_uring let through (and nothing else changed), and
// returns its name for --seccomp-localhost.
func installWeakProfile(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CODEBRIDGE_KUBE_SECCOMP_DIR")
	if dir == "" {
		dir = os.Getenv("KUBELAB_SECCOMP_DIR") // test/kubelab's STATE_DIR/env
	}
	if dir == "" {
		t.Fatal("the kubelet's seccomp directory is needed (KUBELAB_SECCOMP_DIR from test/kubelab's env, or CODEBRIDGE_KUBE_SECCOMP_DIR)")
	}
	b, err := sandbox.SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err = json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	ring := []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}
	for _, r := range p["syscalls"].([]any) {
		rule := r.(map[string]any)
		names := rule["names"].([]any)
		rule["names"] = slices.DeleteFunc(names, func(n any) bool { return slices.Contains(ring, n.(string)) })
	}
	p["syscalls"] = append(p["syscalls"].([]any), map[string]any{"names": ring, "action": "SCMP_ACT_ALLOW"})
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	name := "codebridge-e2e-io-uring-" + randomSuffix() + ".json"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return name
}

// TestKubernetesWeakSeccompRefused: a sandbox Pod whose seccomp filter
// lets io_uring through (codebridge's profile with io_uring allowed, on
// the node) fails its start, naming the call, the profile and the
// opt-out, and leaves no Pod; with --allow-weak-seccomp it runs (and
// io_uring works in it), and doctor names the opt-out.
func TestKubernetesWeakSeccompRefused(t *testing.T) {
	kubeOnly(t)
	weak := "CODEBRIDGE_SECCOMP_LOCALHOST=" + installWeakProfile(t)
	b := startBridge(t, home(t, nil), weak)
	r := b.run("print(1)")
	if !r.isError {
		t.Fatalf("a sandbox whose filter lets io_uring through ran: %s", r.text)
	}
	mustContain(t, r.text, "lets io_uring_setup through", "--allow-weak-seccomp", "codebridge image seccomp")
	if strings.Contains(r.text, "unshare") || strings.Contains(r.text, "keyctl") {
		t.Errorf("the refusal names calls the profile refuses: %s", r.text)
	}
	pid := b.pid
	b.close()
	if left := bridgePods(t, pid); len(left) != 0 {
		t.Errorf("the refused Pod was left: %s", left[0].Name)
	}

	allow := "CODEBRIDGE_ALLOW_WEAK_SECCOMP=true"
	mustContain(t, startBridge(t, home(t, nil), weak, allow).ok(ioUringProbe), "io_uring_setup ok")
	stdout, _, exit := cli(t, home(t, nil), "", []string{weak, allow}, "doctor")
	if exit != 0 {
		t.Errorf("doctor with the opt-out: exit %d:\n%s", exit, stdout)
	}
	mustContain(t, stdout, "warn  seccomp", "lets io_uring_setup through, which --allow-weak-seccomp accepts")
}

// TestKubernetesNetworkPolicyRequired: in a namespace where no
// NetworkPolicy denies the sandbox Pods all traffic, doctor fails and
// the bridge refuses to start sandboxes, saying what to apply or which
// flag accepts it; --allow-no-network-policy runs there and doctor
// names it. A policy that allows some egress beside a deny-all one is
// refused too (policies add up); with the shipped deny-all policy alone
// the same bridge runs its cell, and doctor reads the cluster's checks
// as passed: the network policy, the seccomp filter, the pids limit
// (the lab's kubelet has podPidsLimit 128).
func TestKubernetesNetworkPolicyRequired(t *testing.T) {
	kubeOnly(t)
	cs, _ := kubeAdmin(t)
	ctx := context.Background()
	ns := "codebridge-e2e-np-" + randomSuffix()
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logDelete(t, "namespace "+ns, cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}))
	})
	env := []string{"CODEBRIDGE_NAMESPACE=" + ns}
	want := "no NetworkPolicy selects the sandbox Pods in namespace " + ns

	stdout, _, exit := cli(t, home(t, nil), "", env, "doctor")
	if exit != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "--allow-no-network-policy") {
		t.Errorf("doctor without a policy: exit %d, want 1 and %q:\n%s", exit, want, stdout)
	}
	b := startBridge(t, home(t, nil), env...)
	r := b.run("print(1)")
	if !r.isError {
		t.Fatalf("a sandbox started in a namespace without a policy: %s", r.text)
	}
	mustContain(t, r.text, want, "kubectl -n "+ns+" apply -f deploy/kubernetes/networkpolicy.yaml", "--allow-no-network-policy")

	allow := append(slices.Clone(env), "CODEBRIDGE_ALLOW_NO_NETWORK_POLICY=true")
	mustContain(t, startBridge(t, home(t, nil), allow...).ok("print(6 * 7)"), "42")
	stdout, _, _ = cli(t, home(t, nil), "", allow, "doctor")
	mustContain(t, stdout, "warn  network", "--allow-no-network-policy")

	// Deny-all and a policy that opens DNS: refused, naming the latter.
	if err := ensureNetworkPolicy(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	udp := networkingv1.NetworkPolicyPort{}
	open := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sandboxes-dns", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{sandbox.LabelKey: "1"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{udp}}},
		}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, open, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, b.run("print(1)").text, "NetworkPolicy sandboxes-dns allows them some traffic")

	if err := cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, open.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, b.ok("print(6 * 7)"), "42")
	stdout, _, exit = cli(t, home(t, nil), "", env, "doctor")
	if exit != 0 {
		t.Errorf("doctor with the policy: exit %d:\n%s", exit, stdout)
	}
	mustContain(t, stdout, "ok    network    NetworkPolicy codebridge-sandboxes-deny-all denies the sandbox Pods all ingress and egress",
		"ok    seccomp", "refuses io_uring", "ok    pids", "the Pod's pids limit binds")
}

// TestKubernetesPodEndedOutside: a sandbox Pod deleted from outside
// codebridge mid-cell (as kubectl delete does, while the cell waits on
// an upstream), or evicted through the Eviction API while the cell
// floods its output, is answered as that: the Pod ended from outside,
// not memory, not a broken frame, not the code.
func TestKubernetesPodEndedOutside(t *testing.T) {
	kubeOnly(t)
	cs, _ := kubeAdmin(t)
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	for _, tc := range []struct {
		name, code string
		end        func(ctx context.Context, pod string) error
	}{
		{"deleted while waiting on an upstream", "await mcp_stub.sleep(seconds=600)", func(ctx context.Context, pod string) error {
			return cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{})
		}},
		{"evicted while printing", "while True:\n    print('x' * 4000)", func(ctx context.Context, pod string) error {
			return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, events := eventStub(t)
			b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": s}}))
			pod := strings.TrimSpace(b.ok("import socket\nprint(socket.gethostname())"))
			done := make(chan runResult, 1)
			go func() { done <- b.run("await mcp_stub.sleep(seconds=0)\n" + tc.code) }()
			waitForLine(t, events, "sleep-started")
			if err := tc.end(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			r := <-done
			t.Logf("the answer ends: %s", r.text[max(0, len(r.text)-400):])
			mustFail(t, r, restartWords...)
			mustContain(t, r.text, "outside codebridge", pod)
			for _, wrong := range []string{"memory", "frame channel broke", "descriptors"} {
				if strings.Contains(r.text, wrong) {
					t.Errorf("the answer says %q: %s", wrong, r.text)
				}
			}
			mustContain(t, b.ok("print('after')"), "after")
		})
	}
}

// TestKubernetesFramesOffTheNodeLog: what a cell prints and the frames
// that carry it never reach the node's container log (the kubelet writes
// there all a container's own process prints; the runtime runs through
// pods/exec, whose stream it does not log); code cannot write there
// through the init's descriptors either. When the bridge is killed, its
// Pod ends by itself (the init exits once the runtime is gone), so that
// any bridge's sweep can remove it.
func TestKubernetesFramesOffTheNodeLog(t *testing.T) {
	kubeOnly(t)
	cs, _ := kubeAdmin(t)
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	b := startBridge(t, home(t, nil))
	mark := "tenant-data-" + randomSuffix()
	out := b.ok(`import socket, sys
print("` + mark + `", socket.gethostname())
print("` + mark + `", file=sys.stderr)
for fd in (1, 2):
    try:
        open("/proc/1/fd/%d" % fd, "w").write("` + mark + ` via the init\n")
        print("wrote to the init's", fd)
    except OSError as e:
        print("init fd", fd, type(e).__name__)`)
	mustContain(t, out, "init fd 1 PermissionError", "init fd 2 PermissionError")
	pod := strings.Fields(out)[1]
	ctx := context.Background()
	raw, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: "sandbox"}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 0 {
		t.Errorf("the node's container log of %s holds %d bytes (want none): %.300q", pod, len(raw), raw)
	}

	b.kill(syscall.SIGKILL)
	readyPod(t, cs, ns, "", func(p *corev1.Pod) bool { return p.Name == pod }, podEnded)
	_ = cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{})
}
