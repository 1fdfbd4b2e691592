//go:build kubernetes

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/yaml"
)

// bridgeImage is the bridge's image the in-cluster test builds from
// deploy/kubernetes/Containerfile and gives the cluster's containerd.
const bridgeImage = "localhost/codebridge-bridge:e2e"

// TestKubernetesBridgeInCluster: the bridge runs in the cluster as the
// Pod of deploy/kubernetes/'s Deployment, with only its Role, reached
// through a port-forward on loopback, and runs a cell in a sandbox Pod
// that names it as owner. Then the bridge is killed with SIGKILL (no
// clean-up) twice: restarted in place (the same Pod), the next bridge's
// sweep removes its predecessor's sandboxes; killed and its Pod deleted
// at once, once the Deployment's next bridge has run a cell no sandbox
// Pod of the first one is left.
//
// It needs podman (to build the bridge's image) and ctr with the
// cluster's containerd socket (CODEBRIDGE_KUBE_CONTAINERD, else
// KUBELAB_CONTAINERD_SOCKET, else containerd/containerd.sock beside
// KUBECONFIG, as test/kubelab lays it out), and runs on the node (it kills the bridge's process by its
// listening address). The lab's Pods reach nothing, so the bridge's Pod
// uses the host network to reach the API server on 127.0.0.1.
func TestKubernetesBridgeInCluster(t *testing.T) {
	kubeOnly(t)
	needTool(t, "podman", "podman")
	needTool(t, "ctr", "containerd")
	buildBridgeImage(t)
	cs, cfg := kubeAdmin(t)
	ctx := context.Background()
	ns := "codebridge-e2e-pod-" + randomSuffix()
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logDelete(t, "namespace "+ns, cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}))
	})
	applyDeploy(t, cs, cfg, ns)
	checkSeccompInstaller(t, cs, ns)

	first := readyBridgePod(t, cs, ns, func(*corev1.Pod) bool { return true })
	port := int(first.Spec.Containers[0].Ports[0].ContainerPort)
	c := forwardBridge(t, cfg, cs, ns, first)
	mustContain(t, c.ok("print(6 * 7)"), "42")
	owned := sandboxPodsOf(t, cs, ns, string(first.UID))
	if len(owned) == 0 {
		t.Fatal("no sandbox Pod carries the bridge Pod's UID")
	}
	if refs := owned[0].OwnerReferences; len(refs) != 1 || refs[0].UID != first.UID {
		t.Errorf("sandbox Pod %s: owner references %v, want the bridge Pod", owned[0].Name, refs)
	}

	// Restarted in place: the same Pod, a new process.
	killBridge(t, port)
	again := readyBridgePod(t, cs, ns, func(p *corev1.Pod) bool {
		return p.UID == first.UID && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount > 0
	})
	mustContain(t, forwardBridge(t, cfg, cs, ns, again).ok("print('again')"), "again")
	for _, p := range owned {
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
			t.Errorf("sandbox Pod %s of the killed bridge is left after the restarted one ran a cell", p.Name)
		}
	}

	// Killed, and its Pod deleted at once.
	killBridge(t, port)
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, first.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	next := readyBridgePod(t, cs, ns, func(p *corev1.Pod) bool { return p.UID != first.UID })
	mustContain(t, forwardBridge(t, cfg, cs, ns, next).ok("print('next')"), "next")
	if left := sandboxPodsOf(t, cs, ns, string(first.UID)); len(left) != 0 {
		t.Errorf("%d sandbox Pod(s) of the deleted bridge left once the next one ran: %s", len(left), left[0].Name)
	}
}

// killBridge kills, with SIGKILL, the bridge process on this node that
// serves HTTP on 127.0.0.1:port.
func killBridge(t *testing.T, port int) {
	t.Helper()
	want := "\x00--http\x00127.0.0.1:" + strconv.Itoa(port) + "\x00"
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), want) || !strings.Contains(string(b), "codebridge") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no bridge process serves 127.0.0.1:%d on this node", port)
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// kubeAdmin is the clientset and configuration of KUBECONFIG.
func kubeAdmin(t *testing.T) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cfg
}

// buildBridgeImage builds the bridge's image as deploy/kubernetes/
// says (a static binary on top of the sandbox image, no registry) and
// imports it into the cluster's containerd.
func buildBridgeImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("go", "build", "-tags", "kubernetes", "-o", filepath.Join(dir, "codebridge"), "./cmd/codebridge")
	run("podman", "build", "-q", "-t", bridgeImage, "--build-arg", "BASE="+testImage, "-f", filepath.Join(repoRoot, "deploy/kubernetes/Containerfile"), dir)
	archive := filepath.Join(dir, "bridge.tar")
	run("podman", "save", "--format", "oci-archive", "-o", archive, bridgeImage)
	sock := os.Getenv("CODEBRIDGE_KUBE_CONTAINERD")
	if sock == "" {
		sock = os.Getenv("KUBELAB_CONTAINERD_SOCKET") // test/kubelab's STATE_DIR/env
	}
	if sock == "" {
		sock = filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "containerd", "containerd.sock")
	}
	name, _, _ := strings.Cut(bridgeImage, ":")
	run("ctr", "--address", sock, "-n", "k8s.io", "images", "import", "--base-name", name, archive)
}

// applyDeploy creates deploy/kubernetes/'s account, Role, NetworkPolicy
// and Deployment in ns, changed only as the lab needs: the test's image,
// loopback HTTP without tokens on a free port, and the host network with
// the API server's loopback address.
func applyDeploy(t *testing.T, cs *kubernetes.Clientset, cfg *rest.Config, ns string) {
	t.Helper()
	ctx := context.Background()
	var sa corev1.ServiceAccount
	var role rbacv1.Role
	var rb rbacv1.RoleBinding
	var np networkingv1.NetworkPolicy
	var dep appsv1.Deployment
	readYAML(t, "serviceaccount.yaml", &sa)
	readYAML(t, "rbac.yaml", &role, &rb)
	readYAML(t, "networkpolicy.yaml", &np)
	readYAML(t, "deployment.yaml", &dep)
	sa.Namespace, role.Namespace, rb.Namespace, np.Namespace, dep.Namespace = ns, ns, ns, ns, ns
	rb.Subjects[0].Namespace = ns
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &sa, metav1.CreateOptions{}))
	must(cs.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}))
	must(cs.RbacV1().RoleBindings(ns).Create(ctx, &rb, metav1.CreateOptions{}))
	must(cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &np, metav1.CreateOptions{}))

	port := freePort(t)
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	spec := &dep.Spec.Template.Spec
	spec.HostNetwork = true
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil })
	c := &spec.Containers[0]
	c.Image = bridgeImage
	c.ImagePullPolicy = corev1.PullNever
	c.Args = []string{"serve", "--http", "127.0.0.1:" + strconv.Itoa(port), "--warm", "1"}
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "tokens" })
	// The probe, like the port-forward, reaches the host's loopback.
	c.ReadinessProbe.HTTPGet.Host = "127.0.0.1"
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CODEBRIDGE_IMAGE" })
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: api.Hostname()},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: api.Port()},
		corev1.EnvVar{Name: "CODEBRIDGE_IMAGE", Value: testImage},
		corev1.EnvVar{Name: "CODEBRIDGE_LOG_LEVEL", Value: "debug"})
	must(cs.AppsV1().Deployments(ns).Create(ctx, &dep, metav1.CreateOptions{}))
}

// checkSeccompInstaller runs deploy/kubernetes/seccomp-installer.yaml's
// DaemonSet with the bridge's image, its hostPath moved to a directory
// of the test's on this node, and checks that once its Pod is ready the
// directory holds codebridge.json, the profile the bridge's build prints.
func checkSeccompInstaller(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	var ds appsv1.DaemonSet
	readYAML(t, "seccomp-installer.yaml", &ds)
	ds.Namespace = ns
	dir := t.TempDir()
	spec := &ds.Spec.Template.Spec
	spec.Volumes[0].HostPath.Path = dir
	spec.Containers[0].Image = bridgeImage
	spec.Containers[0].ImagePullPolicy = corev1.PullNever
	ctx := context.Background()
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readyPod(t, cs, ns, "app.kubernetes.io/name=codebridge-seccomp", func(*corev1.Pod) bool { return true })
	got, err := os.ReadFile(filepath.Join(dir, sandbox.DefaultSeccompLocalhost))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != string(want) {
		t.Errorf("the DaemonSet wrote %d bytes that are not codebridge's profile (%d bytes)", len(got), len(want))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("the DaemonSet left %v", left)
	}
}

// readyPod waits (watching; again when a watch ends) for a Pod that
// selector selects (all in ns when empty), that is not being deleted, for
// which state holds (podReady, podEnded) and want holds, and returns it.
func readyPod(t *testing.T, cs *kubernetes.Clientset, ns, selector string, want func(*corev1.Pod) bool, state ...func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	if len(state) == 0 {
		state = []func(*corev1.Pod) bool{podReady}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatalf("watching the Pods %q: %v; %s", selector, err, bridgeDiagnosis(cs, ns))
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.DeletionTimestamp == nil && state[0](p) && want(p) {
				w.Stop()
				return p
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			t.Fatalf("no Pod %q came to the state wanted in 3 minutes: %s", selector, bridgeDiagnosis(cs, ns))
		}
	}
}

// podEnded says whether a Pod's containers have all ended.
func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// readYAML decodes the documents of a file of deploy/kubernetes/ into
// objs, in order.
func readYAML(t *testing.T, name string, objs ...any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != len(objs) {
		t.Fatalf("%s has %d documents, want %d", name, len(docs), len(objs))
	}
	for i, d := range docs {
		if err := yaml.UnmarshalStrict([]byte(d), objs[i]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// readyBridgePod waits (watching) for a ready bridge Pod of the
// Deployment for which want holds, and returns it.
func readyBridgePod(t *testing.T, cs *kubernetes.Clientset, ns string, want func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	return readyPod(t, cs, ns, "app.kubernetes.io/name=codebridge", want)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// bridgeDiagnosis is the bridge Pods' states and the namespace's events.
func bridgeDiagnosis(cs *kubernetes.Clientset, ns string) string {
	ctx := context.Background()
	var b strings.Builder
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s %s %v\n", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
		}
	}
	if evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "event %s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// forwardBridge forwards a loopback port to the bridge Pod's HTTP port
// (as `kubectl port-forward` does: SPDY through the API server and the
// kubelet) and opens an MCP session through it.
func forwardBridge(t *testing.T, cfg *rest.Config, cs *kubernetes.Clientset, ns string, p *corev1.Pod) *httpClient {
	t.Helper()
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(p.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	port := p.Spec.Containers[0].Ports[0].ContainerPort
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	t.Cleanup(func() { close(stop) })
	select {
	case <-ready:
	case ferr := <-errc:
		t.Fatalf("port-forward to %s: %v", p.Name, ferr)
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("port-forward ports: %v %v", ports, err)
	}
	b := &httpBridge{t: t, url: fmt.Sprintf("http://127.0.0.1:%d/mcp", ports[0].Local), stderr: &syncBuffer{}}
	return b.connect(t, "in-cluster")
}

// sandboxPodsOf lists the sandbox Pods whose owner label names the bridge
// Pod with uid.
func sandboxPodsOf(t *testing.T, cs *kubernetes.Clientset, ns, uid string) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=1,%s=%s", sandbox.LabelKey, sandbox.LabelPodUID, uid),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
