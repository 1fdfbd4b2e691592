//go:build kubernetes

package kube

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// sandboxContainer is the name of the one container of a sandbox Pod.
const sandboxContainer = "sandbox"

// kubeGrace is how long a sandbox Pod is given to stop when the cluster
// (not the bridge, which deletes at once) ends it: the sandbox keeps no
// state worth a graceful stop.
const kubeGrace = 1

// Requests of a sandbox Pod: what the scheduler reserves for it. An idle
// sandbox uses a few MiB and no CPU, so the warm pool and idle sessions
// pack onto a node; the limits are the configured ones.
var (
	kubeRequestCPU    = resource.MustParse("50m")
	kubeRequestMemory = resource.MustParse("64Mi")
)

// kubeEphemeralStorage bounds the node's disk a sandbox Pod's emptyDirs on
// disk and writable layer may use (it has neither: its root is read-only
// and its scratch space is in memory) and what the kubelet counts of its
// container's logs. The kubelet evicts a Pod beyond it, at its next
// check. It does not bound the termination-message file, which the
// kubelet leaves out of the count (kubernetes#122224): see
// [kubeTerminationPath].
var kubeEphemeralStorage = resource.MustParse("1Gi")

// kubeTerminationPath is where the kubelet mounts the container's
// termination-message file, a file on the node's disk that it bind-mounts
// writable and does not count against any limit: at the default
// /dev/termination-log, code could fill the node's disk through it. Under
// /root, which is root's and 0700 in Debian's images (the sandbox image
// and python:*-slim), uid 65534 cannot open it; the sandbox leaves no
// message (the bridge reads how it ended from the container's state).
// The start check (start.go) fails a sandbox that can open it, as
// in an image whose /root is not root's and 0700.
const kubeTerminationPath = "/root/.codebridge-termination-log"

// podOptions is what a sandbox Pod needs besides the [engine.ContainerSpec].
type podOptions struct {
	name      string
	namespace string
	labels    map[string]string      // the owner labels
	ownerRef  *metav1.OwnerReference // the bridge Pod, when in a cluster
	seccomp   *corev1.SeccompProfile // nil: RuntimeDefault
	claim     string                 // the workspace's PersistentVolumeClaim; "": an emptyDir
}

// kubeInitSource is the sandbox container's main process: a minimal init
// that prints nothing and reads nothing. It points its standard streams
// at /dev/null (what a container's main process prints, the kubelet
// writes to the node's disk: nothing of the sandbox's goes there),
// makes itself non-dumpable (code of the sandbox's user cannot open its
// /proc entries or trace it), and reaps the processes that end up with
// it, as a container's pid 1 must. It handles no signal (Python's own
// SIGINT handler is undone): pid 1 of a Pod ignores those sent from
// inside the Pod that it does not handle, so code cannot end it; the
// kubelet's, from outside, end it when the Pod is deleted. SIGCHLD is
// blocked and waited for, so that a child that ends between a reap and
// the wait is not missed. It looks at /proc at least every kubeInitLook
// seconds, and exits once the runtime the bridge started in the Pod,
// and every process after it, has been gone that long (the bridge reads
// the Pod's out-of-memory count after a runtime dies, with a command in
// the Pod): the Pod of a bridge that was killed then ends too, and the
// sweeps remove it (RemoveStale). It knows a runtime ran by seeing it
// (the runtime's start check wakes it with a SIGCHLD), or by reaping a
// process it left.
const kubeInitSource = `import os, signal, time
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
seen, alone = False, None
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            seen = True
    except ChildProcessError:
        pass
    now = time.monotonic()
    if any(p.isdigit() and p != "1" for p in os.listdir("/proc")):
        seen, alone = True, None
    elif seen and alone is None:
        alone = now
    elif seen and now - alone >= LOOK:
        os._exit(0)
    signal.sigtimedwait({signal.SIGCHLD}, LOOK)
`

// kubeInitLook is how often, in seconds, the init looks whether any
// process is left besides itself when none of its children ended.
const kubeInitLook = 5

// podSpec maps the sandbox's hardening onto a Pod: the same user, no
// capabilities, no new privileges, seccomp, a read-only root, sized
// in-memory scratch space, the memory and CPU limits, no service account
// token, no service links, no host namespaces, the OCI runtime as the
// RuntimeClass. The pids limit is the kubelet's (podPidsLimit) and the
// open-files limit the container runtime's: a Pod cannot set either.
func podSpec(spec engine.ContainerSpec, o podOptions) (*corev1.Pod, error) {
	l := spec.Limits.WithDefaults()
	uid, gid, err := parseUser(spec.User)
	if err != nil {
		return nil, err
	}
	seccomp := o.seccomp
	if seccomp == nil {
		seccomp = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	labels := maps.Clone(o.labels)
	for k, v := range spec.Labels {
		labels[k] = labelValue(v)
	}
	memory := *resource.NewQuantity(l.Memory, resource.BinarySI)
	scratch := *resource.NewQuantity(l.TmpSize, resource.BinarySI)
	no, yes := false, true
	grace := int64(kubeGrace)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: o.namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: &uid, RunAsGroup: &gid, RunAsNonRoot: &yes, SeccompProfile: seccomp,
			},
			Containers: []corev1.Container{{
				Name:            sandboxContainer,
				Image:           spec.Image,
				ImagePullPolicy: pullPolicy(spec.Image),
				Command:         []string{"python3", "-I", "-c", strings.ReplaceAll(kubeInitSource, "LOOK", strconv.Itoa(kubeInitLook))},
				Env:             envVars(spec.Env),
				WorkingDir:      engine.WorkspacePath,
				Stdin:           false,
				TTY:             false,

				TerminationMessagePath:   kubeTerminationPath,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: &uid, RunAsGroup: &gid, RunAsNonRoot: &yes,
					Privileged: &no, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: seccomp,
				},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{
						corev1.ResourceEphemeralStorage: kubeEphemeralStorage,
						corev1.ResourceMemory:           memory,
						corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(l.CPUs*1000), resource.DecimalSI),
					},
					Requests: corev1.ResourceList{
						corev1.ResourceMemory: minQuantity(kubeRequestMemory, memory),
						corev1.ResourceCPU:    kubeRequestCPU,
					},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "tmp", MountPath: "/tmp"},
					{Name: "workspace", MountPath: engine.WorkspacePath},
					{Name: "var-tmp", MountPath: "/var/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				memoryVolume("tmp", scratch), memoryVolume("workspace", scratch), memoryVolume("var-tmp", scratch),
			},
		},
	}
	if o.claim != "" {
		mountClaim(pod, o.claim, gid)
	}
	if l.Runtime != "" {
		rc := l.Runtime
		pod.Spec.RuntimeClassName = &rc
	}
	if o.ownerRef != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*o.ownerRef}
	}
	return pod, nil
}

// mountClaim puts the workspace claim at /workspace in place of the
// emptyDir, marks the Pod with it, and makes the volume the sandbox
// user's group's (fsGroup, changed only when its root is not already
// so), so that the code, which runs as that group, can write to it.
func mountClaim(pod *corev1.Pod, claim string, gid int64) {
	for i, v := range pod.Spec.Volumes {
		if v.Name == "workspace" {
			pod.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}
		}
	}
	policy := corev1.FSGroupChangeOnRootMismatch
	pod.Spec.SecurityContext.FSGroup = &gid
	pod.Spec.SecurityContext.FSGroupChangePolicy = &policy
	pod.Labels[engine.LabelWorkspace] = claim
}

// memoryVolume is an emptyDir in memory (a tmpfs, counted against the
// Pod's memory limit) of at most size.
func memoryVolume(name string, size resource.Quantity) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size},
	}}
}

func minQuantity(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// pullPolicy is Never for an image named localhost/... (one built on the
// node, as `codebridge image build` makes: there is no registry to pull
// it from) and IfNotPresent for the others.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.HasPrefix(image, "localhost/") {
		return corev1.PullNever
	}
	return corev1.PullIfNotPresent
}

// parseUser reads "uid:gid" ([engine.DefaultUser] when empty).
func parseUser(user string) (int64, int64, error) {
	if user == "" {
		user = engine.DefaultUser
	}
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	uid, err1 := strconv.ParseInt(u, 10, 64)
	gid, err2 := strconv.ParseInt(g, 10, 64)
	if err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return 0, 0, fmt.Errorf("sandbox: the user %q is not a numeric uid:gid other than root, which a Pod needs", user)
	}
	return uid, gid, nil
}

func envVars(env []string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}

// labelValue makes s a valid label value: at most 63 characters of
// letters, digits, '-', '_' and '.', starting and ending with a letter or
// digit; other characters become '_'.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return strings.Trim(string(b), "-_.")
}
