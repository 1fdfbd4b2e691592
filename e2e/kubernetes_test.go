//go:build kubernetes

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// kubeNamespace is where the end-to-end tests put sandbox Pods, unless
// CODEBRIDGE_NAMESPACE names another.
const kubeNamespace = "codebridge-e2e"

// seccompAsConfigured reports whether a Pod's profile is the one the run
// asks for: the one CODEBRIDGE_SECCOMP_LOCALHOST names, codebridge's on
// the nodes by default, or RuntimeDefault when it says so.
func seccompAsConfigured(p *corev1.SeccompProfile) bool {
	if p == nil {
		return false
	}
	name := os.Getenv("CODEBRIDGE_SECCOMP_LOCALHOST")
	switch name {
	case sandbox.SeccompRuntimeDefault:
		return p.Type == corev1.SeccompProfileTypeRuntimeDefault
	case "":
		name = sandbox.DefaultSeccompLocalhost
	}
	return p.Type == corev1.SeccompProfileTypeLocalhost && p.LocalhostProfile != nil && *p.LocalhostProfile == name
}

// kubeSetup prepares a kubernetes run: the namespace (created when
// missing, with its default service account, which Pods need) is set in
// the environment every bridge under test inherits.
func kubeSetup() error {
	if !onKubernetes() {
		return nil
	}
	if os.Getenv("CODEBRIDGE_NAMESPACE") == "" {
		os.Setenv("CODEBRIDGE_NAMESPACE", kubeNamespace)
	}
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	cs, err := kubeClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return err
	}
	return ensureNetworkPolicy(ctx, cs, ns)
}

// ensureNetworkPolicy puts deploy/kubernetes/networkpolicy.yaml in
// namespace ns, as an operator does: the bridge refuses to start
// sandboxes in a namespace without it.
func ensureNetworkPolicy(ctx context.Context, cs *kubernetes.Clientset, ns string) error {
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/kubernetes/networkpolicy.yaml"))
	if err != nil {
		return err
	}
	var np networkingv1.NetworkPolicy
	if err = yaml.UnmarshalStrict(b, &np); err != nil {
		return fmt.Errorf("deploy/kubernetes/networkpolicy.yaml: %w", err)
	}
	np.Namespace = ns
	_, err = cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &np, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the sandboxes' NetworkPolicy in namespace %s: %w", ns, err)
	}
	return nil
}

// ensureNamespace creates namespace ns when missing and waits (watching)
// for its default service account, which the controller manager makes
// and Pods need.
func ensureNamespace(ctx context.Context, cs *kubernetes.Clientset, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on the cluster of KUBECONFIG=%s: %w", ns, os.Getenv("KUBECONFIG"), err)
	}
	w, err := cs.CoreV1().ServiceAccounts(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "default").String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
		return nil
	}
	select {
	case <-w.ResultChan():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("namespace %s has no default service account (is kube-controller-manager running?)", ns)
	}
}

// kubeClient is a clientset for the cluster of KUBECONFIG (the tests may
// use the whole clientset: it is not linked into codebridge).
func kubeClient() (*kubernetes.Clientset, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading KUBECONFIG: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// bridgePods lists the sandbox Pods a bridge (by its pid) made.
func bridgePods(t *testing.T, pid int) []corev1.Pod {
	t.Helper()
	cs, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Pods(os.Getenv("CODEBRIDGE_NAMESPACE")).List(context.Background(), metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=1,%s=%d", sandbox.LabelKey, sandbox.LabelPID, pid),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestKubernetesImageAbsentFailsAtOnce: a sandbox Pod whose image no node
// has fails the first call with the kubelet's own event, not after the
// start timeout: the start timeout is set far beyond the test's, so a
// wait for it would fail the test by its deadline instead.
func TestKubernetesImageAbsentFailsAtOnce(t *testing.T) {
	kubeOnly(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_IMAGE=localhost/codebridge-absent:none")
	r := b.run("print(1)")
	if !r.isError {
		t.Fatalf("a sandbox without its image ran: %s", r.text)
	}
	mustContain(t, r.text, "cannot start", "ErrImageNeverPull", "its events:", `"localhost/codebridge-absent:none" is not present with pull policy of Never`)
	if strings.Contains(r.text, "timed out") {
		t.Errorf("the start waited for a timeout: %s", r.text)
	}
	if left := bridgePods(t, b.pid); len(left) != 0 {
		t.Errorf("the Pod that could not start was left: %s", left[0].Name)
	}
}

// TestKubernetesRemoveLeavesNoPod: a bridge that stops leaves none of its
// sandbox Pods behind.
func TestKubernetesRemoveLeavesNoPod(t *testing.T) {
	kubeOnly(t)
	b := startBridge(t, home(t, nil))
	mustContain(t, b.ok("print('up')"), "up")
	pid := b.pid
	if n := len(bridgePods(t, pid)); n == 0 {
		t.Fatal("the bridge's sandbox Pod is not labelled with its pid")
	}
	b.close()
	if left := bridgePods(t, pid); len(left) != 0 {
		t.Errorf("%d sandbox Pod(s) left after the bridge stopped: %s", len(left), left[0].Name)
	}
}

// TestKubernetesPodHardening: the hardening is on the live Pod, as the
// API server stored it, and in force inside it.
func TestKubernetesPodHardening(t *testing.T) {
	kubeOnly(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_MEMORY=300m", "CODEBRIDGE_TMP_SIZE=32m")
	inside := b.ok(`import os
st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print("uid", os.getuid(), os.getgid())
print("capeff", st["CapEff"].strip(), "nonewprivs", st["NoNewPrivs"].strip(), "seccomp", st["Seccomp"].strip())
try:
    open("/etc/x", "w")
    print("rootfs writable")
except OSError as e:
    print("rootfs", e.errno)
print("token", os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token"))
print("links", sorted(k for k in os.environ if k.endswith("_SERVICE_HOST") and k != "KUBERNETES_SERVICE_HOST"))
`)
	mustContain(t, inside, "uid 65534 65534", "capeff 0000000000000000 nonewprivs 1 seccomp 2", "rootfs 30", "token False", "links []")

	pods := bridgePods(t, b.pid)
	if len(pods) == 0 {
		t.Fatal("no sandbox Pod of this bridge")
	}
	p := pods[0]
	ps := p.Spec
	c := ps.Containers[0]
	sc, psc := c.SecurityContext, ps.SecurityContext
	checks := map[string]bool{
		"automountServiceAccountToken false": ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken,
		"enableServiceLinks false":           ps.EnableServiceLinks != nil && !*ps.EnableServiceLinks,
		"no host namespaces":                 !ps.HostNetwork && !ps.HostPID && !ps.HostIPC,
		"restartPolicy Never":                ps.RestartPolicy == corev1.RestartPolicyNever,
		"pod runs as 65534, non-root":        psc != nil && *psc.RunAsUser == 65534 && *psc.RunAsGroup == 65534 && *psc.RunAsNonRoot,
		"seccomp as configured":              seccompAsConfigured(sc.SeccompProfile),
		"read-only root":                     sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		"no privilege escalation":            sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		"all capabilities dropped":           sc.Capabilities != nil && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL",
		"memory limit 300Mi":                 c.Resources.Limits.Memory().Value() == 300<<20,
		"ephemeral-storage limit":            c.Resources.Limits.StorageEphemeral().Value() > 0,
		"cpu limit 1":                        c.Resources.Limits.Cpu().MilliValue() == 1000,
	}
	for _, v := range ps.Volumes {
		checks["volume "+v.Name+" in memory, 32Mi"] = v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory &&
			v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Value() == 32<<20
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("the live Pod %s: %s does not hold", p.Name, what)
		}
	}
}

// TestKubernetesMissingPermissionNamed: a bridge whose account lacks a
// permission the engine needs says which verb on which resource, at
// start (a cell fails with it) and in doctor.
func TestKubernetesMissingPermissionNamed(t *testing.T) {
	kubeOnly(t)
	// The deploy Role without "list" on events.
	kc := accountKubeconfig(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
		policyListRule,
	})
	want := "lacks these permissions in namespace " + os.Getenv("CODEBRIDGE_NAMESPACE") + ": list on events"
	stdout, _, exit := cli(t, home(t, nil), "", []string{"KUBECONFIG=" + kc}, "doctor")
	if exit != 1 || !strings.Contains(stdout, want) {
		t.Errorf("doctor: exit %d, want 1 and %q:\n%s", exit, want, stdout)
	}
	b := startBridge(t, home(t, nil), "KUBECONFIG="+kc)
	r := b.run("print(1)")
	if !r.isError || !strings.Contains(r.text, want) {
		t.Errorf("a cell of a bridge without the permission: %s", r.text)
	}
}

// TestKubernetesLeastRoleWorks: with exactly the permissions the engine
// asks for (create, not get, on pods/exec: the WebSocket exec is
// refused and the bridge falls back to SPDY), cells run and the sandbox
// is removed.
func TestKubernetesLeastRoleWorks(t *testing.T) {
	kubeOnly(t)
	kc := accountKubeconfig(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
		policyListRule, leaseRule,
	})
	b := startBridge(t, home(t, nil), "KUBECONFIG="+kc)
	mustContain(t, b.ok("x = 20\nprint(x + 1)"), "21")
	mustContain(t, b.ok("print(x * 2)"), "40")
	pid := b.pid
	b.close()
	if left := bridgePods(t, pid); len(left) != 0 {
		t.Errorf("%d sandbox Pod(s) left", len(left))
	}
}

// policyListRule is the Role's rule that lets the bridge check the
// namespace's NetworkPolicies (deploy/kubernetes/rbac.yaml).
var policyListRule = rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list"}}

// leaseRule is the Role's rule for the Leases of session handles
// (deploy/kubernetes/rbac.yaml), which the bridge checks at start.
var leaseRule = rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "update", "delete", "list"}}

// accountKubeconfig makes a service account in the test namespace bound
// to a Role of rules, and a kubeconfig that acts as it.
func accountKubeconfig(t *testing.T, rules []rbacv1.PolicyRule) string {
	t.Helper()
	cs, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	name := fmt.Sprintf("codebridge-account-%d", time.Now().UnixNano())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}
	if _, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logDelete(t, "the service account", cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), name, metav1.DeleteOptions{}))
		logDelete(t, "the role", cs.RbacV1().Roles(ns).Delete(context.Background(), name, metav1.DeleteOptions{}))
		logDelete(t, "the role binding", cs.RbacV1().RoleBindings(ns).Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
	if _, err = cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err = cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The admin's cluster, the account's token.
	raw, err := clientcmd.NewDefaultClientConfigLoadingRules().Load()
	if err != nil {
		t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = raw.Clusters[cur.Cluster]
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	cfg.CurrentContext = "x"
	kc := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	return kc
}

// writableProbe walks the sandbox's whole filesystem as its user and
// tries to write to every file and directory it finds (a file opened for
// appending, nothing written; a directory by making a file in it and
// removing it), outside /proc and /sys and the scratch mounts that
// have a size (which it checks are sized tmpfs). It prints what it
// could open, as JSON, with the mounts it did not walk and how the two
// termination-log paths answer an open.
const writableProbe = `import errno, json, os, stat
sized = ["/tmp", "/workspace", "/var/tmp", "/dev/shm"]
mounts = {}
for line in open("/proc/mounts"):
    dev, mnt, fs, opts = line.split()[:4]
    mounts[mnt] = (fs, opts.split(","))
unsized = [m for m in sized if mounts.get(m, ("", []))[0] != "tmpfs" or not any(o.startswith("size=") for o in mounts[m][1])]
found, devices = [], []
def open_file(p):
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY))
        return True
    except OSError:
        return False
def make_in(d):
    q = os.path.join(d, ".codebridge-write-probe")
    try:
        os.close(os.open(q, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return False
    os.unlink(q)
    return True
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in sized + ["/proc", "/sys"]]
    if make_in(root):
        found.append(root.rstrip("/") + "/")
    for name in dirs + files:
        p = os.path.join(root, name)
        try:
            mode = os.lstat(p).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and open_file(p):
            found.append(p)
        elif (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)) and open_file(p):
            devices.append(p)
def answer(p):
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
        return "opened"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"found": found, "devices": devices, "unsized": unsized,
                  "default": answer("/dev/termination-log"), "path": answer(TERMINATION)}))`

// TestKubernetesNoUnboundedWrites: a sandbox Pod offers its code no
// writable path outside the sized in-memory scratch mounts, /dev/mqueue
// (bounded by RLIMIT_MSGQUEUE) and character devices. In particular the
// termination-message file, which the kubelet keeps on the node's disk
// and counts against no limit (kubernetes#122224), is where the
// sandbox's user cannot open it, and /dev/termination-log does not
// exist.
func TestKubernetesNoUnboundedWrites(t *testing.T) {
	kubeOnly(t)
	b := startBridge(t, home(t, nil))
	mustContain(t, b.ok("print('up')"), "up")
	pods := bridgePods(t, b.pid)
	if len(pods) == 0 {
		t.Fatal("no sandbox Pod of this bridge")
	}
	path := pods[0].Spec.Containers[0].TerminationMessagePath
	out := b.ok(strings.Replace(writableProbe, "TERMINATION", strconv.Quote(path), 1))
	var probe struct {
		Found, Devices, Unsized []string
		Default, Path           string
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &probe); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range probe.Found {
		if p != "/dev/mqueue/" {
			t.Errorf("the sandbox can write to %s, which no size bounds", p)
		}
	}
	for _, d := range probe.Devices {
		if !slices.Contains([]string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts/ptmx"}, d) {
			t.Errorf("the sandbox can open %s for writing", d)
		}
	}
	if len(probe.Unsized) > 0 {
		t.Errorf("scratch mounts without a size: %v", probe.Unsized)
	}
	if probe.Default != "ENOENT" {
		t.Errorf("/dev/termination-log answers an open with %s, want ENOENT (no such file)", probe.Default)
	}
	if probe.Path != "EACCES" {
		t.Errorf("the termination-message file %s answers an open with %s, want EACCES", path, probe.Path)
	}
}

// kubeOnly skips a test of the kubernetes engine on other engines.
func kubeOnly(t *testing.T) {
	t.Helper()
	needEnv(t)
	if !onKubernetes() {
		t.Skip("runs with CODEBRIDGE_ENGINE=kubernetes and KUBECONFIG naming a cluster")
	}
}

// logDelete logs a failed delete of an object a test made, at its
// cleanup; one it never made (not found) is no failure.
func logDelete(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !apierrors.IsNotFound(err) {
		t.Logf("deleting %s: %v", what, err)
	}
}
