//go:build kubernetes

package kube

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Built says whether this build has the kubernetes engine (build tag
// kubernetes; see off.go).
const Built = true

// namespaceFile is where a Pod's service account says its namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// kubeNeeds are the permissions the engine needs in its namespace: verb
// on resource (with a subresource after '/'). The deploy manifests'
// Role grants exactly these (deploy/kubernetes/rbac.yaml), with
// [kubePolicyNeed] and [kubeClaimNeeds].
var kubeNeeds = []kubeNeed{
	{"create", "pods"}, {"get", "pods"}, {"list", "pods"}, {"watch", "pods"}, {"delete", "pods"},
	{"create", "pods/exec"},
	{"list", "events"},
}

// kubeLeaseNeeds are the permissions of the Leases of session handles
// (lease.go): made, read, taken and released, deleted as a handle ends,
// listed by the sweep.
var kubeLeaseNeeds = []kubeNeed{
	{"create", "leases.coordination.k8s.io"}, {"get", "leases.coordination.k8s.io"}, {"update", "leases.coordination.k8s.io"},
	{"delete", "leases.coordination.k8s.io"}, {"list", "leases.coordination.k8s.io"},
}

// kubeClaimNeeds are the permissions the persistent workspaces need
// besides: their claims are made and read; the bridge never lists or
// deletes them (`codebridge workspace` runs with its user's credentials).
var kubeClaimNeeds = []kubeNeed{{"create", "persistentvolumeclaims"}, {"get", "persistentvolumeclaims"}}

// kubeNeed is a permission: verb on resource (with a subresource after
// '/').
type kubeNeed struct{ verb, resource string }

// kubeConfig finds how to reach the cluster: in a Pod, its service
// account (in-cluster configuration); elsewhere KUBECONFIG or
// ~/.kube/config, as kubectl does. It returns the namespace to use too:
// the one given, else the Pod's own, else the kubeconfig context's, else
// "default".
func kubeConfig(getenv func(string) string, namespace string) (*rest.Config, string, string, error) {
	if getenv("KUBERNETES_SERVICE_HOST") != "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			if namespace == "" {
				b, _ := os.ReadFile(namespaceFile)
				namespace = strings.TrimSpace(string(b))
			}
			if namespace == "" {
				namespace = "default"
			}
			return cfg, namespace, "in-cluster", nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if p := getenv("KUBECONFIG"); p != "" {
		rules.Precedence = strings.Split(p, string(os.PathListSeparator))
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("sandbox: no Kubernetes configuration (%v): set KUBECONFIG to a kubeconfig file, "+
			"or run the bridge in a Pod with a service account", err)
	}
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil || namespace == "" {
			namespace = "default"
		}
	}
	from := "kubeconfig"
	if p := getenv("KUBECONFIG"); p != "" {
		from = p
	}
	return cfg, namespace, from, nil
}

// Connect connects to the cluster and checks, with access reviews, that
// the engine may do what it needs in its namespace, and that a
// NetworkPolicy closes the sandbox Pods' network there.
func Connect(ctx context.Context, opts engine.Options) (engine.Engine, error) {
	opts = opts.WithDefaults()
	getenv, log := opts.Getenv, opts.Log
	cfg, ns, from, err := kubeConfig(getenv, opts.Namespace)
	if err != nil {
		return nil, err
	}
	quietKlog(log)
	// Each sandbox costs a create, a watch, an exec and a delete; the
	// client's default of 5 requests a second would queue a warm pool.
	cfg.QPS, cfg.Burst = 50, 100
	rc, err := coreClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the Kubernetes client (%s): %w", from, err)
	}
	name := fmt.Sprintf("kubernetes at %s, namespace %s", cfg.Host, ns)
	size := opts.WorkspaceSize
	if size == 0 {
		size = engine.DefaultWorkspaceSize
	}
	e := &kubeEngine{
		name: name, ns: ns, cfg: cfg, rest: rc,
		pods: restPods{c: rc, ns: ns}, events: restEvents{c: rc, ns: ns}, claims: restClaims{c: rc, ns: ns},
		log: log.With("engine", name), owner: kubeOwnerFrom(getenv, ns),
		storageClass: opts.StorageClass, claimSize: *resource.NewQuantity(size, resource.BinarySI),
	}
	leases, err := NewLeases(cfg, LeaseOptions{Namespace: ns, Identity: LeaseIdentity(getenv("POD_NAME")), Log: e.log})
	if err != nil {
		return nil, err
	}
	e.holds = &handleHolds{leases: leases}
	e.seccomp = seccompProfile(opts.SeccompLocalhost)
	e.allowWeakSeccomp = opts.AllowWeakSeccomp
	needs := append(slices.Clip(kubeNeeds), kubeLeaseNeeds...)
	if !opts.AllowNoNetworkPolicy {
		needs = append(slices.Clip(needs), kubePolicyNeed)
	}
	if opts.Workspaces {
		needs = append(slices.Clip(needs), kubeClaimNeeds...)
	}
	if err := checkKubeAccess(ctx, rc, ns, name, needs); err != nil {
		return nil, err
	}
	if err := e.checkNetworkPolicy(ctx, rc, opts.AllowNoNetworkPolicy); err != nil {
		return nil, err
	}
	if opts.Workspaces {
		if err := e.checkStorageClass(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// quietKlog sends what client-go logs (through klog, to stderr by
// default) to the bridge's log; the errors it reports from streams that
// end (an exec stream the bridge closed when it removed the sandbox)
// are expected, so they are logged at debug level.
func quietKlog(log *slog.Logger) {
	klogOnce.Do(func() {
		klog.SetSlogLogger(log.With("from", "client-go"))
		utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, kv ...any) {
			log.Debug("client-go: "+msg, append([]any{"err", err}, kv...)...)
		}}
	})
}

var klogOnce sync.Once

// checkKubeAccess asks the API server whether every permission in needs
// ([kubeNeeds], and [kubeClaimNeeds] with persistent workspaces) is
// granted, and names the missing ones.
func checkKubeAccess(ctx context.Context, rc rest.Interface, ns, name string, needs []kubeNeed) error {
	var missing []string
	for _, n := range needs {
		resource, sub, _ := strings.Cut(n.resource, "/")
		ok, err := accessReview(ctx, rc, ns, n.verb, resource, sub)
		if err != nil {
			return fmt.Errorf("sandbox: %s does not answer an access review (%w): check the address and credentials in the kubeconfig", name, err)
		}
		if !ok {
			missing = append(missing, n.verb+" on "+n.resource)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sandbox: %s: the bridge lacks these permissions in namespace %s: %s; grant them with a Role bound to its account "+
			"(deploy/kubernetes/rbac.yaml has the Role the bridge needs)", name, ns, strings.Join(missing, ", "))
	}
	return nil
}

// kubeOwner is who made a sandbox Pod: in a cluster, the bridge's own Pod
// (its name and UID, from the downward API: POD_NAME, POD_UID, and
// POD_NAMESPACE when it is not the sandboxes' namespace); outside, the
// host and process, as for the local engines.
type kubeOwner struct {
	proc   engine.Owner
	pod    string
	podUID string
}

func kubeOwnerFrom(getenv func(string) string, ns string) kubeOwner {
	o := kubeOwner{proc: engine.CurrentOwner()}
	o.proc.Host = labelValue(o.proc.Host)
	name, uid, podNS := getenv("POD_NAME"), getenv("POD_UID"), getenv("POD_NAMESPACE")
	// An owner reference can only name an object of the same namespace.
	if name != "" && uid != "" && (podNS == "" || podNS == ns) {
		o.pod, o.podUID = name, uid
	}
	return o
}

func (o kubeOwner) labels() map[string]string {
	l := o.proc.Labels()
	if o.pod != "" {
		l[LabelPod] = labelValue(o.pod)
		l[LabelPodUID] = labelValue(o.podUID)
	}
	return l
}

// ref is the owner reference to the bridge's Pod, so that the cluster
// removes the sandboxes with it; nil outside a cluster.
func (o kubeOwner) ref() *metav1.OwnerReference {
	if o.pod == "" {
		return nil
	}
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: o.pod, UID: types.UID(o.podUID)}
}

// stale reports whether the bridge that made a Pod with these labels is
// gone: for a bridge in a Pod, its Pod no longer exists (or is another
// one of the same name), or it is this Pod and an earlier process in it
// made them; for one outside, as [owner.IsStale].
func (o kubeOwner) stale(ctx context.Context, pods podClient, labels map[string]string) (bool, error) {
	uid := labels[LabelPodUID]
	if uid == "" {
		return o.proc.IsStale(labels), nil
	}
	if uid == o.podUID {
		// This Pod's own: stale when an earlier container of it made
		// them (the bridge was restarted in place, its Pod kept).
		return labels[engine.LabelPID] != strconv.Itoa(o.proc.PID) || labels[engine.LabelStart] != o.proc.Start, nil
	}
	p, err := pods.Get(ctx, labels[LabelPod], metav1.GetOptions{})
	if isKubeNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return string(p.UID) != uid, nil
}

// seccompProfile is the sandbox Pods' profile: codebridge's on the nodes
// ([DefaultSeccompLocalhost]) unless another is named, or nil for the
// container runtime's own ([SeccompRuntimeDefault]).
func seccompProfile(name string) *corev1.SeccompProfile {
	switch name {
	case SeccompRuntimeDefault:
		return nil
	case "":
		name = DefaultSeccompLocalhost
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}
}
