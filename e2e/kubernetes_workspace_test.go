//go:build kubernetes

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestKubernetesPersistentWorkspace: with --workspace project on
// Kubernetes, /workspace is a PersistentVolumeClaim that the cluster's
// own controller binds (the lab's default StorageClass): a file written
// there survives the sandbox Pod being replaced and the bridge
// restarting; `codebridge workspace` lists the claim; over HTTP two
// principals get two claims, and neither sees the other's files.
//
// The project is this package's directory, the same run after run, so
// the runs reuse their claims (the lab has a few volumes, not given back
// when a claim is deleted); each run's files have names of their own.
func TestKubernetesPersistentWorkspace(t *testing.T) {
	kubeOnly(t)
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	mark := strconv.FormatInt(time.Now().UnixNano(), 36)
	env := []string{"CODEBRIDGE_WORKSPACE=project", "CODEBRIDGE_ROOTS=" + root}
	h := home(t, nil)

	b := startBridge(t, h, env...)
	write := fmt.Sprintf("import os\nopen('/workspace/kept-%[1]s.txt', 'w').write('%[1]s')\n"+
		"st = os.stat('/workspace/kept-%[1]s.txt')\nprint('owner', st.st_uid, st.st_gid)", mark)
	mustContain(t, b.ok(write), "owner 65534 65534")
	first := workspacePod(t, b.pid)
	claim := claimOfPod(first)
	if claim == "" {
		t.Fatalf("the sandbox Pod %s mounts no claim at /workspace: %+v", first.Name, first.Spec.Volumes)
	}
	read := fmt.Sprintf("print(open('/workspace/kept-%[1]s.txt').read() == '%[1]s')", mark)

	// The sandbox is replaced (its interpreter ends): a new Pod, the
	// same claim, the file still there.
	if r := b.run("import os\nos._exit(3)"); !r.isError {
		t.Fatalf("a cell that ended its interpreter succeeded: %s", r.text)
	}
	mustContain(t, b.ok(read), "True")
	second := workspacePod(t, b.pid)
	if second.Name == first.Name || claimOfPod(second) != claim {
		t.Errorf("after the replacement: Pod %s (was %s), claim %q (was %q)", second.Name, first.Name, claimOfPod(second), claim)
	}
	b.close()

	// The bridge restarts: its Pods are gone, the claim is not, and the
	// next bridge's sandbox finds the file.
	// The claim says whose it is only as a digest, and nothing of the
	// project's path: anyone who may list claims reads its metadata.
	pvc := getClaim(t, claim)
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Labels[sandbox.LabelKey] != "1" || pvc.Labels[sandbox.LabelPrincipal] != digestOf("local") ||
		slices.ContainsFunc(slices.Collect(maps.Keys(pvc.Annotations)), func(k string) bool { return strings.HasPrefix(k, sandbox.LabelKey) }) {
		t.Errorf("claim %s: phase %s, labels %v, annotations %v", claim, pvc.Status.Phase, pvc.Labels, pvc.Annotations)
	}
	b2 := startBridge(t, h, env...)
	mustContain(t, b2.ok(read), "True")
	b2.close()

	stdout, stderr, exit := cli(t, h, "", env, "workspace", "--json")
	if exit != 0 || !strings.Contains(stdout, `"name": "`+claim+`"`) || !strings.Contains(stdout, `"principal": "sha256:`+digestOf("local")+`"`) {
		t.Errorf("codebridge workspace: exit %d, the claim %s not listed:\n%s\n%s", exit, claim, stdout, stderr)
	}

	checkPrincipalClaims(t, h, env, mark)
}

// TestKubernetesWorkspaceClaimUnboundFailsAtOnce: a workspace claim of a
// StorageClass that does not exist never binds: the first call fails
// with the claim's own events (the controller's words), not after a
// timeout, and no sandbox Pod is made.
func TestKubernetesWorkspaceClaimUnboundFailsAtOnce(t *testing.T) {
	kubeOnly(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_WORKSPACE=project", "CODEBRIDGE_ROOTS="+t.TempDir(),
		"CODEBRIDGE_STORAGE_CLASS=codebridge-absent")
	r := b.run("print(1)")
	if !r.isError {
		t.Fatalf("a sandbox without its workspace ran: %s", r.text)
	}
	mustContain(t, r.text, "cannot be bound", "its events: ProvisioningFailed", `"codebridge-absent" not found`, "--workspace ephemeral")
	if strings.Contains(r.text, "timed out") {
		t.Errorf("the start waited for a timeout: %s", r.text)
	}
	if left := bridgePods(t, b.pid); len(left) != 0 {
		t.Errorf("a Pod was made for a claim that cannot bind: %s", left[0].Name)
	}
	cs, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	list, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == "codebridge-absent" {
			_ = cs.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), c.Name, metav1.DeleteOptions{})
		}
	}
}

// checkPrincipalClaims: an HTTP bridge with two token holders gives each
// a claim of their own, and neither sees the other's file.
func checkPrincipalClaims(t *testing.T, h string, env []string, mark string) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	const aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err := os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hb := startHTTP(t, h, env, "--token-file", tokens)
	alice := hb.clientAs(t, "alice", aliceTok)
	bob := hb.clientAs(t, "bob", bobTok)
	mustContain(t, alice.ok(fmt.Sprintf("open('/workspace/alice-%s.txt', 'w').write('a')\nprint('saved')", mark)), "saved")
	mustContain(t, bob.ok(fmt.Sprintf("open('/workspace/bob-%s.txt', 'w').write('b')\nprint('saved')", mark)), "saved")
	// Neither sees the other's files, of this run or an earlier one, nor
	// the local user's.
	look := "import os\nprint('seen', sorted(f for f in os.listdir('/workspace') if f.startswith(('%s', 'kept-'))))"
	mustContain(t, alice.ok(fmt.Sprintf(look, "bob-")), "seen []")
	mustContain(t, bob.ok(fmt.Sprintf(look, "alice-")), "seen []")
	mustContain(t, alice.ok(fmt.Sprintf("print(os.path.exists('/workspace/alice-%s.txt'))", mark)), "True")

	pods := bridgePods(t, hb.cmd.Process.Pid)
	byPrincipal := map[string]string{}
	for _, p := range pods {
		if c := claimOfPod(&p); c != "" {
			pvc := getClaim(t, c)
			byPrincipal[pvc.Labels[sandbox.LabelPrincipal]] = c
			if meta, _ := json.Marshal(pvc.ObjectMeta); strings.Contains(string(meta), "alice") || strings.Contains(string(meta), "bob") {
				t.Errorf("claim %s names its principal: %s", c, meta)
			}
		}
	}
	a, b := byPrincipal[digestOf("token:alice")], byPrincipal[digestOf("token:bob")]
	if len(byPrincipal) != 2 || a == "" || b == "" || a == b {
		t.Errorf("the HTTP sessions' claims by principal digest: %v", byPrincipal)
	}
}

// digestOf is the label value that stands for a principal on its claims:
// the first 32 hex digits of the SHA-256 of its name as the audit gives
// it (docs/scale-out.md says how an operator computes it).
func digestOf(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return hex.EncodeToString(sum[:16])
}

// workspacePod is the one live sandbox Pod of the bridge with this pid.
func workspacePod(t *testing.T, pid int) *corev1.Pod {
	t.Helper()
	var live []corev1.Pod
	for _, p := range bridgePods(t, pid) {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		t.Fatalf("%d live sandbox Pods of bridge %d, want 1", len(live), pid)
	}
	return &live[0]
}

// claimOfPod is the claim a Pod mounts at /workspace, or "".
func claimOfPod(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == "workspace" && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

func getClaim(t *testing.T, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	cs, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(os.Getenv("CODEBRIDGE_NAMESPACE")).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

// TestKubernetesWorkspaceMissingPermissionNamed: with a persistent
// workspace, an account with the Role's Pod, event and Lease permissions but
// none on persistentvolumeclaims is told which verbs it lacks, in doctor
// and at the first cell; with --workspace ephemeral the same account
// works.
func TestKubernetesWorkspaceMissingPermissionNamed(t *testing.T) {
	kubeOnly(t)
	kc := accountKubeconfig(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
		policyListRule,
		leaseRule,
	})
	want := "lacks these permissions in namespace " + os.Getenv("CODEBRIDGE_NAMESPACE") +
		": create on persistentvolumeclaims, get on persistentvolumeclaims;"
	env := []string{"KUBECONFIG=" + kc, "CODEBRIDGE_WORKSPACE=project", "CODEBRIDGE_ROOTS=" + t.TempDir()}
	stdout, _, exit := cli(t, home(t, nil), "", env, "doctor")
	if exit != 1 || !strings.Contains(stdout, want) {
		t.Errorf("doctor: exit %d, want 1 and %q:\n%s", exit, want, stdout)
	}
	b := startBridge(t, home(t, nil), env...)
	if r := b.run("print(1)"); !r.isError || !strings.Contains(r.text, want) {
		t.Errorf("a cell of a bridge without the permission: %s", r.text)
	}
	b.close()
	e := startBridge(t, home(t, nil), "KUBECONFIG="+kc, "CODEBRIDGE_WORKSPACE=ephemeral")
	mustContain(t, e.ok("print(6 * 7)"), "42")
}

// TestKubernetesWorkspaceNeedsAStorageClass: on a cluster with no default
// StorageClass, a bridge with a persistent workspace and no class named
// does not start its engine: doctor and the first cell say so, and what
// to do; naming the class works. The cluster's default classes are made
// not default for the test (the API server's admission is what is
// asked), and made default again after it.
func TestKubernetesWorkspaceNeedsAStorageClass(t *testing.T) {
	kubeOnly(t)
	cs, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	classes, err := cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const isDefault = "storageclass.kubernetes.io/is-default-class"
	var defaults []string
	setDefault := func(name, v string) {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, isDefault, v)
		if _, perr := cs.StorageV1().StorageClasses().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); perr != nil {
			t.Fatal(perr)
		}
	}
	for _, c := range classes.Items {
		if c.Annotations[isDefault] == "true" {
			defaults = append(defaults, c.Name)
		}
	}
	if len(defaults) == 0 {
		t.Fatal("the cluster has no default StorageClass to take away (test/kubelab makes one)")
	}
	for _, name := range defaults {
		setDefault(name, "false")
		t.Cleanup(func() { setDefault(name, "true") })
	}
	waitNoDefaultClass(t, cs)

	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"CODEBRIDGE_WORKSPACE=project", "CODEBRIDGE_ROOTS=" + root}
	want := "has no default StorageClass"
	stdout, _, exit := cli(t, home(t, nil), "", env, "doctor")
	if exit != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "--storage-class") || !strings.Contains(stdout, "--workspace ephemeral") {
		t.Errorf("doctor: exit %d, want 1 and %q with what to do:\n%s", exit, want, stdout)
	}
	b := startBridge(t, home(t, nil), env...)
	if r := b.run("print(1)"); !r.isError || !strings.Contains(r.text, want) {
		t.Errorf("a cell: %s", r.text)
	}
	b.close()
	named := startBridge(t, home(t, nil), append(env, "CODEBRIDGE_STORAGE_CLASS="+defaults[0])...)
	mustContain(t, named.ok("import os\nprint(os.access('/workspace', os.W_OK))"), "True")
}

// waitNoDefaultClass waits until the API server's admission no longer
// gives a claim a default class (its cache of classes follows the
// change), asking as the bridge does: a claim made in a dry run.
func waitNoDefaultClass(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	probe := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-probe-"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.StorageClassName == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server still gives claims the class %s", *got.Spec.StorageClassName)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
