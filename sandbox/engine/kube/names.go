package kube

import "errors"

// What the kubernetes engine is called and checks of the cluster it runs
// sandboxes on, stated here (in both builds) because the command line
// names it: the seccomp profile the Pods get by default, and how to get a
// build with the engine.

// Labels of a sandbox Pod that a bridge running in a Pod made.
const (
	LabelPod    = "io.codebridge.pod"
	LabelPodUID = "io.codebridge.pod-uid"
)

// DefaultSeccompLocalhost is the seccomp profile of a sandbox Pod when
// none is configured: codebridge's own (`codebridge image seccomp`
// prints it), installed on each node under the kubelet's seccomp
// directory by that name (deploy/kubernetes/seccomp-installer.yaml).
const DefaultSeccompLocalhost = "codebridge.json"

// SeccompRuntimeDefault, given as the profile, runs sandbox Pods with the
// container runtime's own profile (RuntimeDefault). containerd 1.6's lets
// io_uring through, which the start check refuses unless
// [engine.Options.AllowWeakSeccomp].
const SeccompRuntimeDefault = "RuntimeDefault"

// ErrNotBuilt is the refusal of the kubernetes engine by a build without
// it.
var ErrNotBuilt = errors.New("the kubernetes engine is not compiled into this codebridge (it is opt-in: " +
	"client-go would cost every bridge about 6 MB of memory): install a build with it, " +
	Install + ", or use the image of deploy/kubernetes/Containerfile")

// Install is the command that installs a codebridge with the Kubernetes
// engine compiled in. The module is not published, so it runs from a
// clone, as the default install does.
const Install = "from a clone of codebridge: go install -tags kubernetes ./cmd/codebridge"
