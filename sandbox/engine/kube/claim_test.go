//go:build kubernetes

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestClaimName: a workspace volume's name becomes a DNS label; a name
// that already is one is kept; hostile names (a principal's text is part
// of them) stay labels and stay apart.
func TestClaimName(t *testing.T) {
	if got := claimName("codebridge-ws-proj-0a1b2c"); got != "codebridge-ws-proj-0a1b2c" {
		t.Errorf("a DNS label was changed to %q", got)
	}
	seen := map[string]string{}
	for _, in := range []string{
		"codebridge-ws-my_proj-0a1b2c", "codebridge-ws-my.proj-0a1b2c", "Upper", "../../etc/passwd", "a;rm -rf /",
		"-lead", "trail-", "", "___", strings.Repeat("x", 300), strings.Repeat("x", 301), "ü-名前", "a\nb", "--storage-class=evil",
	} {
		got := claimName(in)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("claimName(%q) = %q: not a DNS label: %v", in, got, errs)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q share the claim %q", in, other, got)
		}
		seen[got] = in
	}
}

// TestPodSpecWorkspaceClaim: with a claim, /workspace is that claim (the
// other scratch volumes stay in memory), the volume is the sandbox
// group's (fsGroup), and the Pod is labelled with it.
func TestPodSpecWorkspaceClaim(t *testing.T) {
	pod, err := podSpec(engine.ContainerSpec{Image: "i", Cmd: testCmd}, podOptions{name: "p", labels: map[string]string{engine.LabelKey: "1"}, claim: "ws-1"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		byName[v.Name] = v
	}
	holds(t, "/workspace is the claim", byName["workspace"].PersistentVolumeClaim != nil &&
		byName["workspace"].PersistentVolumeClaim.ClaimName == "ws-1" && byName["workspace"].EmptyDir == nil &&
		!byName["workspace"].PersistentVolumeClaim.ReadOnly)
	holds(t, "/tmp still in memory", byName["tmp"].EmptyDir != nil && byName["tmp"].EmptyDir.Medium == corev1.StorageMediumMemory)
	holds(t, "no host path", byName["workspace"].HostPath == nil)
	psc := pod.Spec.SecurityContext
	holds(t, "fsGroup is the sandbox's group", psc.FSGroup != nil && *psc.FSGroup == 65534)
	holds(t, "ownership changed only when the root differs", psc.FSGroupChangePolicy != nil &&
		*psc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch)
	holds(t, "still runs as 65534, non-root", *psc.RunAsUser == 65534 && *psc.RunAsNonRoot)
	holds(t, "labelled with its claim", pod.Labels[engine.LabelWorkspace] == "ws-1")

	pod, _ = podSpec(engine.ContainerSpec{Image: "i", Cmd: testCmd}, podOptions{name: "p", labels: map[string]string{}})
	holds(t, "no fsGroup without a claim", pod.Spec.SecurityContext.FSGroup == nil && claimOf(pod) == "")
}

// TestKubeEnsureClaim: a missing claim is made (ReadWriteOnce, the size
// and class given, labelled with a digest of its principal, and nothing
// readable of the principal or the project on it: anyone who lists
// claims in the namespace would read it) and waited for until bound; an
// existing one is used as it is.
func TestKubeEnsureClaim(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pvc := a.(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim)
		pvc.Status.Phase = corev1.ClaimBound // what the controller would do
		return false, nil, nil
	})
	e := testKubeEngine(cs)
	e.storageClass, e.claimSize = "fast", resource.MustParse("2Gi")
	ws := engine.Mount{Source: "codebridge-ws-proj_x-0a1b", Volume: true,
		Labels: map[string]string{engine.LabelProject: "/home/me/proj x", engine.LabelPrincipal: "token:alice"}}
	name, err := e.ensureClaim(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holds(t, "ReadWriteOnce", len(pvc.Spec.AccessModes) == 1 && pvc.Spec.AccessModes[0] == corev1.ReadWriteOnce)
	holds(t, "size", pvc.Spec.Resources.Requests.Storage().Value() == 2<<30)
	holds(t, "class", pvc.Spec.StorageClassName != nil && *pvc.Spec.StorageClassName == "fast")
	// sha256("token:alice"), its first 32 hex digits.
	const digest = "142cf5f743a90ad4ee6dc54c46e017cf"
	holds(t, "labels: codebridge's, the principal's digest", len(pvc.Labels) == 2 && pvc.Labels[engine.LabelKey] == "1" && pvc.Labels[engine.LabelPrincipal] == digest)
	holds(t, "no annotations", len(pvc.Annotations) == 0)
	meta, _ := json.Marshal(pvc.ObjectMeta)
	for _, secret := range []string{"alice", "proj x", "/home/me"} {
		holds(t, "the claim's metadata does not hold "+secret, !strings.Contains(string(meta), secret))
	}

	list, err := e.Workspaces(context.Background())
	if err != nil || len(list) != 1 || list[0].Name != name || list[0].Principal != "sha256:"+digest || list[0].Project != "" {
		t.Errorf("Workspaces = %+v, %v", list, err)
	}
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("pods are forbidden")
	})
	if list, err := e.Workspaces(context.Background()); err == nil {
		t.Errorf("Workspaces without the Pods that mount the claims = %+v, want an error (each would show unused)", list)
	}
	cs.ClearActions()
	if _, err := e.ensureClaim(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" {
			t.Errorf("an existing claim was made again: %v", a)
		}
	}
}

// TestKubeClaimUnbindableFailsFast: a claim that will not bind fails the
// start as soon as its events say so, with those events, before any Pod
// is made; the context has no timeout.
func TestKubeClaimUnbindableFailsFast(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pvc := a.(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim)
		err := cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("events"), &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "ev", Namespace: "ns"},
			InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: pvc.Name, Namespace: "ns"},
			Type:           corev1.EventTypeNormal, Reason: "FailedBinding",
			Message: "no persistent volumes available for this claim and no storage class is set",
		}, "ns")
		return false, nil, err
	})
	e := testKubeEngine(cs)
	_, err := e.Start(context.Background(), engine.ContainerSpec{Image: "i", Cmd: testCmd, Workspace: &engine.Mount{Source: "ws", Volume: true}})
	if err == nil {
		t.Fatal("the start succeeded")
	}
	for _, want := range []string{"workspace claim ws", "cannot be bound", "FailedBinding: no persistent volumes available", "--workspace ephemeral"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if pods, _ := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Error("a Pod was made for a claim that cannot bind")
	}
}

// TestKubeStorageClassCheck: with no class named, the start-up check
// asks for a trial claim in a dry run, and says what to do when the
// cluster gives it no default class; with a class named, it asks
// nothing.
func TestKubeStorageClassCheck(t *testing.T) {
	def := ""
	var dryRun []string
	cs := fake.NewClientset()
	cs.PrependReactor("create", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateActionImpl)
		dryRun = ca.CreateOptions.DryRun
		pvc := ca.GetObject().(*corev1.PersistentVolumeClaim).DeepCopy()
		if def != "" {
			pvc.Spec.StorageClassName = &def // the DefaultStorageClass admission
		}
		return true, pvc, nil
	})
	e := testKubeEngine(cs)
	err := e.checkStorageClass(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no default StorageClass") || !strings.Contains(err.Error(), "--storage-class") ||
		!strings.Contains(err.Error(), "--workspace ephemeral") {
		t.Errorf("no default class: %v", err)
	}
	holds(t, "a dry run", len(dryRun) == 1 && dryRun[0] == metav1.DryRunAll)
	def = "standard"
	if err := e.checkStorageClass(context.Background()); err != nil {
		t.Errorf("a default class: %v", err)
	}
	cs.ClearActions()
	e.storageClass = "named"
	if err := e.checkStorageClass(context.Background()); err != nil || len(cs.Actions()) != 0 {
		t.Errorf("a named class: %v, %v", err, cs.Actions())
	}
}
