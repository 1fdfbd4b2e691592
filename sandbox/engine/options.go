package engine

import (
	"log/slog"
	"os"
)

// Options say which container engine to use, and how.
type Options struct {
	// Kind is "auto" (the default), "podman", "docker" or "kubernetes".
	Kind string
	// Getenv reads DOCKER_HOST, CONTAINER_HOST, DOCKER_CERT_PATH and
	// XDG_RUNTIME_DIR (and, for Kubernetes, KUBECONFIG,
	// KUBERNETES_SERVICE_HOST and the bridge Pod's POD_NAME, POD_UID and
	// POD_NAMESPACE). Nil means os.Getenv. (The engine client reads the
	// TLS variables themselves from the process environment.)
	Getenv func(string) string
	// Log receives the engine's diagnostics. Nil means slog.Default().
	Log *slog.Logger
	// Namespace is the Kubernetes namespace of the sandbox Pods (kind
	// "kubernetes"). Empty means the bridge Pod's own in a cluster, else
	// the kubeconfig context's, else "default".
	Namespace string
	// SeccompLocalhost names the seccomp profile of the sandbox Pods,
	// installed on the Kubernetes nodes (a path relative to the kubelet's
	// seccomp directory). Empty means kube.DefaultSeccompLocalhost;
	// kube.SeccompRuntimeDefault means the container runtime's own.
	SeccompLocalhost string
	// AllowWeakSeccomp lets sandbox Pods run whose seccomp filter lets
	// through what codebridge's profile refuses (io_uring, user
	// namespaces, ptrace, keyctl); without it such a Pod fails its start.
	AllowWeakSeccomp bool
	// AllowNoNetworkPolicy lets the kubernetes engine start sandboxes in
	// a namespace where no NetworkPolicy denies the sandbox Pods all
	// ingress and egress; without it the engine refuses to connect.
	AllowNoNetworkPolicy bool
	// Workspaces says that sandboxes will mount persistent workspaces:
	// the kubernetes engine then checks, when it connects, that it may
	// make their PersistentVolumeClaims and that a storage class exists.
	Workspaces bool
	// StorageClass is the StorageClass of the workspace claims (kind
	// "kubernetes"). Empty means the cluster's default.
	StorageClass string
	// WorkspaceSize is the size of a workspace claim in bytes (kind
	// "kubernetes"). Zero means [DefaultWorkspaceSize].
	WorkspaceSize int64
}

// WithDefaults returns the options with Kind, Getenv and Log set to their
// defaults where they are not given.
func (o Options) WithDefaults() Options {
	if o.Kind == "" {
		o.Kind = "auto"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}
