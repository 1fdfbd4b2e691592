//go:build kubernetes

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// The kubernetes part of the bench (-engine kubernetes; `make
// bench-kube`): how many idle sessions one node holds. It needs the
// build tag kubernetes, for the engine and for the client that reads the
// node.

// kubeBuilt says this bench can measure a cluster.
const kubeBuilt = true

// kubeCluster is the cluster of KUBECONFIG, read with the cluster
// admin's view (nodes, their stats summary through the API server).
type kubeCluster struct {
	cs  *kubernetes.Clientset
	cfg *rest.Config
	ns  string
}

func connectCluster() (*kubeCluster, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading KUBECONFIG: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	return &kubeCluster{cs: cs, cfg: cfg, ns: ns}, nil
}

// bridgePods are the running sandbox Pods the bridge of pid made.
func (k *kubeCluster) bridgePods(ctx context.Context, pid int) ([]corev1.Pod, error) {
	list, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=1,%s=%d", sandbox.LabelKey, sandbox.LabelPID, pid),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// podMemory reads the kubelet's stats summary of node (through the API
// server's node proxy) and returns the working set and RSS of each Pod
// of the namespace named in want that has figures.
func (k *kubeCluster) podMemory(ctx context.Context, node string, want map[string]bool) (ws, rss map[string]float64, err error) {
	raw, err := k.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the kubelet's stats summary of %s: %w", node, err)
	}
	var summary struct {
		Pods []struct {
			PodRef struct{ Name, Namespace string } `json:"podRef"`
			Memory *struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
				RSSBytes        *uint64 `json:"rssBytes"`
			} `json:"memory"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		return nil, nil, fmt.Errorf("reading the stats summary: %w", err)
	}
	ws, rss = map[string]float64{}, map[string]float64{}
	for _, p := range summary.Pods {
		if p.PodRef.Namespace != k.ns || !want[p.PodRef.Name] || p.Memory == nil || p.Memory.WorkingSetBytes == nil || *p.Memory.WorkingSetBytes == 0 {
			continue
		}
		ws[p.PodRef.Name] = float64(*p.Memory.WorkingSetBytes)
		if p.Memory.RSSBytes != nil {
			rss[p.PodRef.Name] = float64(*p.Memory.RSSBytes)
		}
	}
	return ws, rss, nil
}

// measureKubeNode starts n idle sessions (each ran print(1): its Pod
// runs with the runtime loaded), reads each Pod's memory from the
// kubelet's stats summary, and derives how many such sessions the node
// holds: the least of the kubelet's max Pods (less the Pods already
// there), the node's allocatable memory over the memory each Pod
// requests (what the scheduler counts), and over the memory each idle
// Pod uses. It removes every Pod it made, and checks that none is left.
func (e *env) measureKubeNode(ctx context.Context) ([]row, error) {
	k, err := connectCluster()
	if err != nil {
		return nil, err
	}
	n := e.idleSessions
	b, err := e.startHTTPBridge("--warm", "0", "--max-sessions", fmt.Sprint(n+1), "--idle-timeout", "3600")
	if err != nil {
		return nil, err
	}
	pid := b.cmd.Process.Pid
	defer func() {
		b.stop()
		e.leftPods = k.removeLeft(context.WithoutCancel(ctx), pid)
	}()
	for i := range n {
		if err = e.idleSession(ctx, b, i); err != nil {
			return nil, err
		}
		if (i+1)%10 == 0 {
			progress(fmt.Sprintf("%d idle sessions", i+1))
		}
	}
	pods, err := k.bridgePods(ctx, pid)
	if err != nil {
		return nil, err
	}
	if len(pods) != n {
		return nil, fmt.Errorf("%d sandbox Pods of the bridge, want %d", len(pods), n)
	}
	node := pods[0].Spec.NodeName
	for _, p := range pods {
		if p.Spec.NodeName != node {
			return nil, fmt.Errorf("the sandbox Pods are on more than one node (%s, %s): the measurement is of one", node, p.Spec.NodeName)
		}
	}
	ws, rss, from, err := k.allPodMemory(ctx, node, pods)
	if err != nil {
		return nil, err
	}
	return k.nodeRows(ctx, node, pods, ws, rss, from)
}

// idleSession opens the bridge's i-th session and runs a first cell in
// it, which leaves its sandbox Pod idle.
func (e *env) idleSession(ctx context.Context, b *httpBridge, i int) error {
	s, err := b.session(ctx)
	if err != nil {
		return err
	}
	if out, err := s.run(ctx, "print(1)"); err != nil || strings.TrimSpace(out) != "1" {
		return fmt.Errorf("session %d: %q, %w", i+1, out, err)
	}
	if e.python == "" { // for the report, which the data section fills elsewhere
		v, _ := s.run(ctx, "import platform\nprint(platform.python_version())")
		e.python = strings.TrimSpace(v)
	}
	return nil
}

// allPodMemory reads the memory of every Pod in want: from the kubelet's
// stats summary through the API server, waiting (at most two minutes:
// the kubelet refreshes its stats every few seconds) until it has every
// Pod; where the API server will not proxy to the node (it refuses a
// loopback address, as in test/kubelab), from the Pods' memory cgroups on
// this machine, which must then be the node. It says which it read.
func (k *kubeCluster) allPodMemory(ctx context.Context, node string, pods []corev1.Pod) (ws, rss sample, from string, err error) {
	want := map[string]bool{}
	for _, p := range pods {
		want[p.Name] = true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		wsBy, rssBy, err := k.podMemory(ctx, node, want)
		if err != nil {
			progress(err.Error() + "; reading the Pods' cgroups on this machine instead")
			ws, rss, err = cgroupMemory(pods)
			return ws, rss, "the Pods' memory cgroups (working set: usage less inactive file pages, as the kubelet counts)", err
		}
		if len(wsBy) == len(want) {
			for name, v := range wsBy {
				ws = append(ws, v)
				if x, ok := rssBy[name]; ok {
					rss = append(rss, x)
				}
			}
			return ws, rss, "the kubelet's stats summary", nil
		}
		if time.Now().After(deadline) {
			return nil, nil, "", fmt.Errorf("the stats summary of %s has figures for %d of the %d sandbox Pods after two minutes", node, len(wsBy), len(want))
		}
		select {
		case <-ctx.Done():
			return nil, nil, "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// cgroupMemory reads each Pod's memory cgroup (cgroupfs driver, cgroup
// v1 or v2) on this machine: the working set (usage less inactive file
// pages) and the RSS (anonymous memory).
func cgroupMemory(pods []corev1.Pod) (ws, rss sample, err error) {
	for _, p := range pods {
		dir, v2, err := podCgroup(p)
		if err != nil {
			return nil, nil, err
		}
		usageFile, inactive, anon := "memory.usage_in_bytes", "total_inactive_file", "total_rss"
		if v2 {
			usageFile, inactive, anon = "memory.current", "inactive_file", "anon"
		}
		usage, err := readNumber(filepath.Join(dir, usageFile))
		if err != nil {
			return nil, nil, err
		}
		stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return nil, nil, err
		}
		fields := map[string]float64{}
		for _, line := range strings.Split(string(stat), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok {
				fields[k], _ = strconv.ParseFloat(v, 64)
			}
		}
		ws = append(ws, usage-fields[inactive])
		rss = append(rss, fields[anon])
	}
	return ws, rss, nil
}

// podCgroup finds a Pod's memory cgroup under the kubelet's kubepods
// (cgroupfs driver): under its QoS class's, by the Pod's UID.
func podCgroup(p corev1.Pod) (dir string, v2 bool, err error) {
	for _, root := range []string{"/sys/fs/cgroup/memory/kubepods", "/sys/fs/cgroup/kubepods"} {
		for _, qos := range []string{"burstable", "besteffort", ""} {
			dir := filepath.Join(root, qos, "pod"+string(p.UID))
			if _, err := os.Stat(dir); err == nil {
				return dir, root == "/sys/fs/cgroup/kubepods", nil
			}
		}
	}
	return "", false, fmt.Errorf("no memory cgroup of Pod %s (uid %s) on this machine: run the bench on the node, or where the API server proxies to the kubelet", p.Name, p.UID)
}

func readNumber(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
}

// nodeRows derives the node's capacity for idle sessions from its
// allocatable memory and Pods and the measured per-Pod memory.
func (k *kubeCluster) nodeRows(ctx context.Context, node string, pods []corev1.Pod, ws, rss sample, from string) ([]row, error) {
	nd, err := k.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	all, err := k.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	others := len(all.Items) - len(pods)
	allocMem := float64(nd.Status.Allocatable.Memory().Value())
	maxPods := int(nd.Status.Allocatable.Pods().Value())
	request := float64(pods[0].Spec.Containers[0].Resources.Requests.Memory().Value())
	perPod := ws.median()
	bounds := []struct {
		short, what string
		n           int
	}{
		{"the kubelet's max Pods", fmt.Sprintf("max Pods %d less %d other Pods", maxPods, others), maxPods - others},
		{"the memory requests", fmt.Sprintf("allocatable %s / request %s (what the scheduler counts)", fmtBytes(allocMem), fmtBytes(request)), int(allocMem / request)},
		{"the memory used", fmt.Sprintf("allocatable %s / idle working set %s", fmtBytes(allocMem), fmtBytes(perPod)), int(allocMem / perPod)},
	}
	least := bounds[0]
	var said []string
	for _, b := range bounds {
		said = append(said, fmt.Sprintf("%s = %s", b.what, commas(b.n)))
		if b.n < least.n {
			least = b
		}
	}
	return []row{
		{name: fmt.Sprintf("Kubernetes: memory of one idle sandbox Pod (working set; %d Pods; from %s)", len(ws), from),
			value: fmtBytes(perPod), spread: spread(ws, fmtBytes) + "; RSS " + fmtBytes(rss.median()), info: true},
		{name: "Kubernetes: idle sessions one node holds (" + node + "), the least of three bounds", value: commas(least.n) + ", bound by " + least.short,
			spread: strings.Join(said, "; "), info: true},
	}, nil
}

// removeLeft checks, after the bridge stopped, that none of its sandbox
// Pods is left, deletes any that is, and says how many there were.
func (k *kubeCluster) removeLeft(ctx context.Context, pid int) int {
	pods, err := k.bridgePods(ctx, pid)
	if err != nil {
		progress("listing the sandbox Pods left: " + err.Error())
		return -1
	}
	grace := int64(0)
	for _, p := range pods {
		_ = k.cs.CoreV1().Pods(k.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
	return len(pods)
}

// The frames' channel: a sandbox Pod's frames travelled over pods/attach
// to the container's own process, whose output the kubelet also writes
// to the node's container log; they now travel over pods/exec to a
// command started in the Pod, which it does not log. measureKubeChannels
// times a line's round trip over each, side by side, to the same echo
// program in one Pod, through the same API server and kubelet.

// echoSource copies stdin to stdout line by line.
const echoSource = `import sys
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()`

// channelTrips is how many round trips each channel is timed for.
const channelTrips = 500

func (e *env) measureKubeChannels(ctx context.Context) ([]row, error) {
	k, err := connectCluster()
	if err != nil {
		return nil, err
	}
	pod, err := k.echoPod(ctx, e.image)
	if err != nil {
		return nil, err
	}
	defer func() {
		grace := int64(0)
		_ = k.cs.CoreV1().Pods(k.ns).Delete(context.WithoutCancel(ctx), pod, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}()
	var rows []row
	for _, ch := range []struct {
		what string
		sub  string
		opts runtime.Object
	}{
		{"pods/attach to the container's process (before; the kubelet logs it)", "attach",
			&corev1.PodAttachOptions{Container: "echo", Stdin: true, Stdout: true}},
		{"pods/exec to a command in the Pod (the runtime's channel now; not logged)", "exec",
			&corev1.PodExecOptions{Container: "echo", Command: []string{"python3", "-I", "-u", "-c", echoSource}, Stdin: true, Stdout: true}},
	} {
		trips, err := k.roundTrips(ctx, pod, ch.sub, ch.opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ch.sub, err)
		}
		rows = append(rows, row{name: fmt.Sprintf("Kubernetes: a line's round trip over %s (%d trips)", ch.what, len(trips)),
			value: fmtSeconds(trips.median()) + " median", spread: "p99 " + fmtSeconds(trips.p99()), info: true})
	}
	return rows, nil
}

// echoPod starts a Pod whose process echoes its stdin, hardened as a
// sandbox's is, and waits (watching) until it runs.
func (k *kubeCluster) echoPod(ctx context.Context, image string) (string, error) {
	no, yes, uid := false, true, int64(65534)
	name := fmt.Sprintf("codebridge-bench-echo-%d", time.Now().UnixNano())
	pull := corev1.PullIfNotPresent
	if strings.HasPrefix(image, "localhost/") {
		pull = corev1.PullNever
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns, Labels: map[string]string{"app.kubernetes.io/name": "codebridge-bench"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{
				Name: "echo", Image: image, ImagePullPolicy: pull, Stdin: true,
				Command: []string{"python3", "-I", "-u", "-c", echoSource},
				SecurityContext: &corev1.SecurityContext{RunAsUser: &uid, RunAsGroup: &uid, RunAsNonRoot: &yes,
					AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if _, err := k.cs.CoreV1().Pods(k.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	w, err := k.cs.CoreV1().Pods(k.ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return name, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			return name, nil
		}
	}
	return name, fmt.Errorf("the watch of Pod %s ended before it ran", name)
}

// roundTrips opens sub (attach or exec) of the Pod with opts and times
// channelTrips lines sent and echoed, one at a time.
func (k *kubeCluster) roundTrips(ctx context.Context, pod, sub string, opts runtime.Object) (sample, error) {
	u := k.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(k.ns).Name(pod).SubResource(sub).
		VersionedParams(opts, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewWebSocketExecutor(k.cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW})
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	var trips sample
	for i := range channelTrips + 10 {
		line := fmt.Sprintf("frame %d %s\n", i, strings.Repeat("x", 100))
		start := time.Now()
		if _, err := io.WriteString(inW, line); err != nil {
			return nil, err
		}
		got, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("after %d trips: %w", i, err)
		}
		if got != line {
			return nil, fmt.Errorf("sent %q, got %q", line, got)
		}
		if i >= 10 { // the first trips warm the stream up
			trips = append(trips, time.Since(start).Seconds())
		}
	}
	inW.Close()
	cancel()
	<-done //nolint:errcheck // the stream was cancelled just above: its error says only that
	return trips, nil
}
