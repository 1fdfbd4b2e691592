//go:build kubernetes

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// TestPodSpecHardening: every hardening field of the local engines is on
// the sandbox Pod, from the same settings.
func TestPodSpecHardening(t *testing.T) {
	spec := engine.ContainerSpec{
		Image: "localhost/codebridge-python:bookworm", Cmd: []string{"python3", "-c", "x"},
		Env:    []string{"HOME=/workspace", "A=b=c"},
		Labels: map[string]string{"io.codebridge.extra": "volume:not/a label"},
		Limits: engine.Limits{Memory: 300 << 20, CPUs: 1.5, TmpSize: 32 << 20, Runtime: "gvisor"},
	}
	ref := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "bridge", UID: "u1"}
	pod, err := podSpec(spec, podOptions{name: "p", namespace: "ns", labels: map[string]string{engine.LabelKey: "1"}, ownerRef: ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	checkPodLevel(t, pod)
	checkContainer(t, spec, pod.Spec.Containers[0])
	checkScratch(t, pod)

	// A node's own profile, when one is named; an image from a registry
	// is pulled when missing.
	name := "codebridge.json"
	spec.Image = "docker.io/library/python:3.12-slim"
	pod, err = podSpec(spec, podOptions{name: "p", labels: map[string]string{},
		seccomp: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	holds(t, "Localhost seccomp profile", c.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost &&
		*c.SecurityContext.SeccompProfile.LocalhostProfile == name &&
		pod.Spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost)
	holds(t, "IfNotPresent for a registry image", c.ImagePullPolicy == corev1.PullIfNotPresent)
	holds(t, "no owner reference outside a cluster", len(pod.OwnerReferences) == 0)

	if _, err := podSpec(engine.ContainerSpec{User: "0:0"}, podOptions{}); err == nil {
		t.Error("a Pod for root was made")
	}
}

// testCmd is a sandbox command of the shape the engine needs.
var testCmd = []string{"python3", "-c", "x"}

func holds(t *testing.T, what string, ok bool) {
	t.Helper()
	if !ok {
		t.Errorf("%s does not hold", what)
	}
}

func checkPodLevel(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	ps := pod.Spec
	holds(t, "restartPolicy Never", ps.RestartPolicy == corev1.RestartPolicyNever)
	holds(t, "automountServiceAccountToken false", ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken)
	holds(t, "enableServiceLinks false", ps.EnableServiceLinks != nil && !*ps.EnableServiceLinks)
	holds(t, "no host namespaces", !ps.HostNetwork && !ps.HostPID && !ps.HostIPC)
	holds(t, "runtimeClassName from --oci-runtime", ps.RuntimeClassName != nil && *ps.RuntimeClassName == "gvisor")
	holds(t, "a short grace period", ps.TerminationGracePeriodSeconds != nil && *ps.TerminationGracePeriodSeconds <= 2)
	holds(t, "owner reference", len(pod.OwnerReferences) == 1 && pod.OwnerReferences[0].UID == "u1")
	holds(t, "owner label", pod.Labels[engine.LabelKey] == "1")
	holds(t, "extra label made a valid value", pod.Labels["io.codebridge.extra"] == "volume_not_a_label")
	psc := ps.SecurityContext
	holds(t, "pod runAsUser/Group 65534", psc != nil && *psc.RunAsUser == 65534 && *psc.RunAsGroup == 65534)
	holds(t, "pod runAsNonRoot", *psc.RunAsNonRoot)
	holds(t, "pod seccomp RuntimeDefault", psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
}

func checkContainer(t *testing.T, spec engine.ContainerSpec, c corev1.Container) {
	t.Helper()
	holds(t, "image and pull policy Never for localhost/", c.Image == spec.Image && c.ImagePullPolicy == corev1.PullNever)
	// The runtime is started through pods/exec, whose stream the kubelet
	// does not log; the container's own process is the init, which
	// prints nothing.
	holds(t, "command: the minimal init", len(c.Command) == 4 && c.Command[0] == "python3" && c.Command[2] == "-c" &&
		strings.Contains(c.Command[3], "os.dup2(null, fd)") && !strings.Contains(c.Command[3], "LOOK"))
	holds(t, "env", len(c.Env) == 2 && c.Env[1].Name == "A" && c.Env[1].Value == "b=c")
	holds(t, "no stdin, no TTY", !c.Stdin && !c.StdinOnce && !c.TTY)
	// The kubelet's default, /dev/termination-log, is a file on the
	// node's disk that no limit counts: it must be where uid 65534
	// cannot open it.
	holds(t, "termination message under root's 0700 /root", strings.HasPrefix(c.TerminationMessagePath, "/root/") &&
		c.TerminationMessagePolicy == corev1.TerminationMessageReadFile)
	sc := c.SecurityContext
	holds(t, "container runAsUser/Group/NonRoot", *sc.RunAsUser == 65534 && *sc.RunAsGroup == 65534 && *sc.RunAsNonRoot)
	holds(t, "readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem)
	holds(t, "allowPrivilegeEscalation false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
	holds(t, "not privileged", sc.Privileged != nil && !*sc.Privileged)
	holds(t, "drop ALL capabilities", sc.Capabilities != nil && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0)
	holds(t, "container seccomp RuntimeDefault", sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
	holds(t, "memory limit", c.Resources.Limits.Memory().Value() == 300<<20)
	holds(t, "cpu limit", c.Resources.Limits.Cpu().MilliValue() == 1500)
	holds(t, "ephemeral-storage limit (the logs)", c.Resources.Limits.StorageEphemeral().Value() == 1<<30)
	holds(t, "requests at most the limits", c.Resources.Requests.Memory().Cmp(*c.Resources.Limits.Memory()) <= 0 &&
		c.Resources.Requests.Cpu().Cmp(*c.Resources.Limits.Cpu()) <= 0)
}

func checkScratch(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	mounts := map[string]string{}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, path := range []string{"/tmp", "/workspace", "/var/tmp"} {
		holds(t, "a mount at "+path, mounts[path] != "")
	}
	holds(t, "only the three scratch volumes", len(pod.Spec.Volumes) == 3)
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		holds(t, "volume "+v.Name+" is an emptyDir in memory of the tmp size", ed != nil && ed.Medium == corev1.StorageMediumMemory &&
			ed.SizeLimit != nil && ed.SizeLimit.Value() == 32<<20 && v.HostPath == nil)
	}
}

// watchSignal is a podClient whose Watch says when it was called, so a
// test can change the Pod once the engine watches it.
type watchSignal struct {
	podClient
	watching chan struct{}
}

func (w watchSignal) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := w.podClient.Watch(ctx, opts)
	select {
	case w.watching <- struct{}{}:
	default:
	}
	return wi, err
}

func testKubeEngine(cs *fake.Clientset) *kubeEngine {
	return &kubeEngine{name: "kubernetes at test", ns: "ns", pods: cs.CoreV1().Pods("ns"), events: cs.CoreV1().Events("ns"),
		claims: cs.CoreV1().PersistentVolumeClaims("ns"), claimSize: resource.MustParse("1Gi"),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), owner: kubeOwner{proc: engine.CurrentOwner()}}
}

// TestKubeStartFailsFastWithEvents: a Pod whose image is missing fails
// the start as soon as the kubelet says so, with the Pod's own events in
// the message, and the Pod is deleted. No timeout is involved: the
// context has none.
func TestKubeStartFailsFastWithEvents(t *testing.T) {
	cs := fake.NewClientset()
	e := testKubeEngine(cs)
	watching := make(chan struct{}, 1)
	e.pods = watchSignal{podClient: e.pods, watching: watching}

	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := e.Start(context.Background(), engine.ContainerSpec{Image: "localhost/absent:1", Cmd: testCmd})
		done <- result{err}
	}()
	<-watching
	list, err := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("pods: %v, %v", list, err)
	}
	pod := list.Items[0]
	msg := `Container image "localhost/absent:1" is not present with pull policy of Never`
	_, err = cs.CoreV1().Events("ns").Create(context.Background(), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "ev1", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name, Namespace: "ns"},
		Type:           corev1.EventTypeWarning, Reason: "ErrImageNeverPull", Message: msg,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: sandboxContainer,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: msg}}}}
	if _, err := cs.CoreV1().Pods("ns").UpdateStatus(context.Background(), &pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err == nil {
		t.Fatal("the start succeeded")
	}
	for _, want := range []string{"cannot start", "ErrImageNeverPull", "its events: ErrImageNeverPull: " + msg, "localhost/absent:1"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("the error %q does not say %q", r.err, want)
		}
	}
	if left, _ := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(left.Items) != 0 {
		t.Errorf("the Pod that could not start was left: %v", left.Items[0].Name)
	}
}

// TestKubeStartUnschedulable: a Pod no node can take fails at once, with
// the scheduler's words.
func TestKubeStartUnschedulable(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."}}
		return false, nil, nil
	})
	_, err := testKubeEngine(cs).Start(context.Background(), engine.ContainerSpec{Image: "i", Cmd: testCmd})
	if err == nil || !strings.Contains(err.Error(), "no node can take it (0/1 nodes are available: 1 Insufficient memory.)") {
		t.Fatalf("err = %v", err)
	}
}

// TestKubeStartRefusesHostState: host directories, as a mount or as the
// workspace, are refused with a reason, before any Pod is made.
func TestKubeStartRefusesHostState(t *testing.T) {
	cs := fake.NewClientset()
	e := testKubeEngine(cs)
	_, err := e.Start(context.Background(), engine.ContainerSpec{Image: "i", Mounts: []engine.Mount{{Source: "/etc", Target: "/mnt/etc"}}})
	if err == nil || !strings.Contains(err.Error(), "node's filesystem") {
		t.Errorf("a host mount: %v", err)
	}
	_, err = e.Start(context.Background(), engine.ContainerSpec{Image: "i", Workspace: &engine.Mount{Source: "/home/me/work"}})
	if err == nil || !strings.Contains(err.Error(), "node's filesystem") {
		t.Errorf("a host directory as the workspace: %v", err)
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("the API was called: %v", cs.Actions())
	}
}

// TestKubeRemoveStale: the sweep removes the Pods of bridges that are
// gone (a process of this host that ended; a bridge Pod that no longer
// exists, or exists with another UID; an earlier process of this very
// Pod, restarted in place), and any bridge's Pods that ended more than
// kubeEndedKeep ago (a killed bridge of another host cannot remove
// them), and no other.
func TestKubeRemoveStale(t *testing.T) {
	me := engine.CurrentOwner()
	me.Host = labelValue(me.Host)
	pod := func(name string, labels map[string]string) *corev1.Pod {
		labels[engine.LabelKey] = "1"
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
	}
	procLabels := func(host string, pid int, start string) map[string]string {
		return map[string]string{engine.LabelHost: host, engine.LabelPID: strconv.Itoa(pid), engine.LabelStart: start}
	}
	podLabels := func(owner, uid string) map[string]string {
		l := procLabels("elsewhere", 1, "")
		l[LabelPod], l[LabelPodUID] = owner, uid
		return l
	}
	cs := fake.NewClientset(
		pod("mine", procLabels(me.Host, me.PID, me.Start)),
		pod("dead-process", procLabels(me.Host, 1<<22+1, "1")),
		pod("other-host", procLabels("another-host", 1<<22+1, "1")),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-live", Namespace: "ns", UID: "live-uid"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-again", Namespace: "ns", UID: "new-uid"}},
		pod("of-live-bridge", podLabels("bridge-live", "live-uid")),
		pod("of-deleted-bridge", podLabels("bridge-gone", "gone-uid")),
		pod("of-replaced-bridge", podLabels("bridge-again", "old-uid")),
		pod("of-this-bridge", func() map[string]string {
			l := podLabels("me", "my-uid")
			l[engine.LabelPID], l[engine.LabelStart] = strconv.Itoa(me.PID), me.Start
			return l
		}()),
		pod("of-this-pod-restarted", podLabels("me", "my-uid")),
		// Another host's bridge that was killed: its Pods ended and
		// stay, unless they ended long enough ago.
		endedAt(pod("other-host-ended-long-ago", procLabels("another-host", 1<<22+1, "1")), time.Now().Add(-time.Hour), true),
		endedAt(pod("other-host-failed-long-ago", procLabels("another-host", 1<<22+1, "1")), time.Now().Add(-time.Hour), false),
		endedAt(pod("other-host-just-ended", procLabels("another-host", 1<<22+1, "1")), time.Now(), true),
		// A session handle's Pods outlive the replica that made them:
		// kept while they run, gone as soon as they ended.
		pod("handle-of-deleted-bridge", withHandle(podLabels("bridge-gone", "gone-uid"))),
		endedAt(pod("handle-just-ended", withHandle(podLabels("bridge-live", "live-uid"))), time.Now(), true),
	)
	e := testKubeEngine(cs)
	e.owner.pod, e.owner.podUID = "me", "my-uid"
	n, err := e.RemoveStale(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	left, _ := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, p := range left.Items {
		names = append(names, p.Name)
	}
	got := strings.Join(names, " ")
	want := "bridge-again bridge-live handle-of-deleted-bridge mine of-live-bridge of-this-bridge other-host other-host-just-ended"
	if n != 7 || got != want {
		t.Errorf("removed %d, left %q; want 7 removed, %q left", n, got, want)
	}
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			if g := d.GetDeleteOptions().GracePeriodSeconds; g == nil || *g != 0 {
				t.Errorf("%s was deleted with a grace period", d.GetName())
			}
		}
	}
}

// withHandle marks labels as a session handle's Pod's.
func withHandle(l map[string]string) map[string]string {
	l[engine.LabelHandle], l[engine.LabelPrincipal] = "d1g357", "t-alice"
	return l
}

// endedAt marks a Pod as ended at t: by its container's state, or (as a
// Pod that failed before its container ran) by its conditions only.
func endedAt(p *corev1.Pod, t time.Time, container bool) *corev1.Pod {
	p.Status.Phase = corev1.PodFailed
	if container {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: sandboxContainer, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: metav1.NewTime(t)}}}}
	} else {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t)}}
	}
	return p
}

// TestKubeExitedReasons: a stopped sandbox Pod says why, in the local
// engines' words.
func TestKubeExitedReasons(t *testing.T) {
	for _, tc := range []struct {
		term *corev1.ContainerStateTerminated
		want string
	}{
		{&corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}, "ran out of memory (the limit is 256 MiB)"},
		{&corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3}, "exited with code 3"},
		{&corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 143}, "killed by signal 15 (SIGTERM)"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("u")},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: sandboxContainer, Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: sandboxContainer,
				State: corev1.ContainerState{Terminated: tc.term}}}}}
		e := testKubeEngine(fake.NewClientset(p))
		c := &kubeContainer{engine: e, name: "p", stderr: engine.NewLogWriter("", 0, e.log)}
		if got := c.Exited(context.Background(), time.Second); !strings.Contains(got, tc.want) {
			t.Errorf("%s %d: %q, want %q", tc.term.Reason, tc.term.ExitCode, got, tc.want)
		}
	}
}

// TestKubeAccessNamesMissingVerbs: the engine asks the API server about
// each permission it needs and names every one that is missing, verb on
// resource.
func TestKubeAccessNamesMissingVerbs(t *testing.T) {
	denied := map[string]bool{"list events": true, "create pods/exec": true, "get persistentvolumeclaims": true}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var review struct {
			Spec struct {
				ResourceAttributes struct{ Namespace, Verb, Group, Resource, Subresource string } `json:"resourceAttributes"`
			} `json:"spec"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		a := review.Spec.ResourceAttributes
		what := a.Verb + " " + a.Resource
		if a.Group != "" {
			what += "." + a.Group
		}
		if a.Subresource != "" {
			what += "/" + a.Subresource
		}
		asked = append(asked, a.Namespace+": "+what)
		fmt.Fprintf(w, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":%v}}`, !denied[what])
	}))
	defer srv.Close()
	rc, err := coreClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = checkKubeAccess(context.Background(), rc, "team", "kubernetes at test", kubeNeeds)
	if err == nil || !strings.Contains(err.Error(), "lacks these permissions in namespace team: create on pods/exec, list on events;") {
		t.Fatalf("err = %v", err)
	}
	if len(asked) != len(kubeNeeds) || asked[0] != "team: create pods" {
		t.Errorf("asked %q", asked)
	}
	// With persistent workspaces, the claims' verbs are asked too.
	err = checkKubeAccess(context.Background(), rc, "team", "kubernetes at test", append(kubeNeeds, kubeClaimNeeds...))
	if err == nil || !strings.Contains(err.Error(), "list on events, get on persistentvolumeclaims;") {
		t.Fatalf("with workspaces: err = %v", err)
	}
	// The network policy check's verb is of another API group.
	denied["list networkpolicies.networking.k8s.io"] = true
	err = checkKubeAccess(context.Background(), rc, "team", "kubernetes at test", append(kubeNeeds, kubePolicyNeed))
	if err == nil || !strings.Contains(err.Error(), "list on events, list on networkpolicies.networking.k8s.io;") {
		t.Fatalf("with the policy check: err = %v", err)
	}
	denied = nil
	if err := checkKubeAccess(context.Background(), rc, "team", "kubernetes at test", kubeNeeds); err != nil {
		t.Errorf("all granted: %v", err)
	}
}

// TestKubeEndedOutside: a Pod deleted or evicted from outside is the
// reason the sandbox ended, with the cluster's words; one the bridge
// removed itself, or that simply ended, is not.
func TestKubeEndedOutside(t *testing.T) {
	cs := fake.NewClientset()
	e := testKubeEngine(cs)
	ctx := context.Background()
	at := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	killed := corev1.ContainerStatus{Name: sandboxContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "deleted", DeletionTimestamp: &at}},
		{ObjectMeta: metav1.ObjectMeta{Name: "preempted", DeletionTimestamp: &at}, Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "evicted"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
			Message: "The node was low on resource: ephemeral-storage.", ContainerStatuses: []corev1.ContainerStatus{killed}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ended"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{killed}}},
	}
	for _, p := range pods {
		p.Namespace = "ns"
		if _, err := cs.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{
		"deleted":   "its Pod deleted was deleted from outside codebridge at 2026-11-27T10:00:00Z",
		"preempted": "(EvictionByEvictionAPI: Eviction API: evicting)",
		"evicted":   "the node evicted its Pod evicted: The node was low on resource: ephemeral-storage.",
		"gone":      "its Pod gone is gone: something outside codebridge deleted it",
		"ended":     "",
	} {
		c := &kubeContainer{engine: e, name: name}
		got := c.EndedOutside(ctx)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	// The evicted Pod's container was killed: Exited names the eviction,
	// not the kill (or memory).
	c := &kubeContainer{engine: e, name: "evicted", stderr: engine.NewLogWriter("", 0, e.log)}
	if got := c.Exited(ctx, 0); !strings.HasPrefix(got, "the node evicted its Pod") {
		t.Errorf("Exited of an evicted Pod: %q", got)
	}
	c = &kubeContainer{engine: e, name: "deleted"}
	c.removed.Store(true)
	if got := c.EndedOutside(ctx); got != "" {
		t.Errorf("a Pod the bridge removed: %q", got)
	}
}
