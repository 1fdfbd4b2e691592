//go:build kubernetes

package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// kubeEngine runs each sandbox as a Pod of one container, whose main
// process is a minimal init, and starts the runtime in it through
// pods/exec, whose stream carries the frames (WebSocket, or SPDY where
// the API server has only that): an exec stream goes from the container
// runtime through the kubelet and the API server to the bridge, and the
// kubelet writes none of it to the node's container log, as it does all
// a container's main process prints. Nothing is mounted from the bridge:
// the runtime arrives on stdin, as with the other engines' attach
// channel. It has no direct channel (it is not a [channelEngine]).
type kubeEngine struct {
	name    string
	ns      string
	cfg     *rest.Config   // for the exec streams; nil in unit tests
	rest    rest.Interface // the core group's REST client
	pods    podClient
	events  eventClient
	log     *slog.Logger
	owner   kubeOwner
	seccomp *corev1.SeccompProfile // a node's Localhost profile, or nil for RuntimeDefault

	// allowWeakSeccomp lets Pods run whose filter the start check finds
	// weaker than codebridge's profile; findings are what the start
	// checks and the network policy check found, for doctor.
	allowWeakSeccomp bool
	findings         kubeFindings

	// The persistent workspaces' claims: their client, class (empty:
	// the cluster's default) and size.
	claims       claimClient
	storageClass string
	claimSize    resource.Quantity

	// holds are the Leases of session handles (hold.go).
	holds *handleHolds
}

func (e *kubeEngine) Name() string { return e.name }

// Close has nothing to release: the REST client's connections are
// pooled by net/http and the sandbox Pods are removed one by one.
func (e *kubeEngine) Close() error { return nil }

// kubeMountRefusal says why a host directory cannot be given to a Pod.
func kubeMountRefusal(m engine.Mount) error {
	return fmt.Errorf("sandbox: --mount %s is refused with the kubernetes engine: a sandbox Pod runs on a node of the cluster, "+
		"whose files are not this machine's, and a hostPath volume would give model-written code the node's filesystem; "+
		"pass files in with the files argument of run_python, or use a local engine", m.Source)
}

func (e *kubeEngine) Start(ctx context.Context, spec engine.ContainerSpec) (engine.Container, error) {
	if len(spec.Mounts) > 0 {
		return nil, kubeMountRefusal(spec.Mounts[0])
	}
	counted := e.findings.claimPidsCount()
	o := podOptions{name: newPodName(), namespace: e.ns, labels: e.owner.labels(), ownerRef: e.owner.ref(), seccomp: e.seccomp}
	if spec.Detachable {
		o.ownerRef = nil // any replica may hold it: see adopt.go
	}
	if ws := spec.Workspace; ws != nil {
		if !ws.Volume {
			return nil, kubeMountRefusal(*ws)
		}
		var err error
		if o.claim, err = e.ensureClaim(ctx, *ws); err != nil {
			return nil, err
		}
	}
	command, err := kubeCommand(spec.Cmd, counted)
	if err == nil {
		var c engine.Container
		if c, err = e.startPod(ctx, spec, o, command, counted); err == nil {
			return c, nil
		}
	}
	if counted {
		e.findings.pidsUncounted()
	}
	return nil, err
}

// startPod makes the sandbox Pod, waits until it runs, starts the
// runtime's command in it and applies its start check. A Pod that
// fails any of these is deleted.
func (e *kubeEngine) startPod(ctx context.Context, spec engine.ContainerSpec, o podOptions, command []string, measurePids bool) (engine.Container, error) {
	pod, err := podSpec(spec, o)
	if err != nil {
		return nil, err
	}
	created, err := e.pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s refused the sandbox Pod: %w%s", e.name, err, createHint(spec.Limits, err))
	}
	c := &kubeContainer{engine: e, name: created.Name, memory: memoryLimit(created), oomKills: -1,
		stderr: engine.NewLogWriter("sandbox runtime: ", engine.ContainerLogBudget, e.log.With("pod", created.Name))}
	fail := func(err error) (engine.Container, error) {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = c.Remove(rmCtx)
		return nil, err
	}
	if err = e.waitRunning(ctx, created); err != nil {
		return fail(err)
	}
	if err = c.exec(command); err != nil {
		return fail(fmt.Errorf("sandbox: starting the runtime in Pod %s on %s (pods/exec): %w", c.name, e.name, err))
	}
	report, err := c.startCheck(ctx)
	if err != nil {
		return fail(fmt.Errorf("sandbox: sandbox Pod %s on %s: %w", c.name, e.name, err))
	}
	if err := e.judge(c.name, report, measurePids); err != nil {
		return fail(err)
	}
	c.oomKills = report.OOMKills
	return c, nil
}

// createHint explains a create the API server refused.
func createHint(l engine.Limits, err error) string {
	switch {
	case l.Runtime != "" && strings.Contains(err.Error(), "RuntimeClass"):
		return fmt.Sprintf(" (the OCI runtime %q is configured: on Kubernetes it is a RuntimeClass of that name, whose handler "+
			"is installed on the nodes: create it, or unset the OCI runtime setting)", l.Runtime)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "quota"):
		return " (a ResourceQuota of the namespace is used up: raise it, or lower CODEBRIDGE_MEMORY / CODEBRIDGE_CPUS)"
	case apierrors.IsForbidden(err):
		return " (an admission policy or the bridge's Role refused it: see deploy/kubernetes/ for what the bridge needs)"
	case apierrors.IsInvalid(err):
		return " (check the image name, --user and --oci-runtime)"
	}
	return ""
}

// newPodName is a fresh sandbox Pod name.
func newPodName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "codebridge-sandbox-" + hex.EncodeToString(b)
}

// HasImage cannot be answered for a cluster: which node a Pod lands on,
// and what that node holds or may pull, are known only when it starts.
// It says yes, so the configured (or built) image is used; a Pod whose
// image is missing fails its start at once with the kubelet's event.
func (e *kubeEngine) HasImage(context.Context, string) (bool, error) { return true, nil }

func (e *kubeEngine) List(ctx context.Context) ([]engine.ContainerInfo, error) {
	list, err := e.pods.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelKey + "=1"})
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing codebridge Pods on %s: %w", e.name, err)
	}
	out := make([]engine.ContainerInfo, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, engine.ContainerInfo{ID: p.Name, State: podState(&p), Labels: p.Labels})
	}
	return out, nil
}

// podState words a Pod's phase as the local engines word a container's
// state.
func podState(p *corev1.Pod) string {
	switch p.Status.Phase {
	case corev1.PodRunning:
		return "running"
	case corev1.PodSucceeded, corev1.PodFailed:
		return "exited"
	case corev1.PodPending:
		return "created"
	}
	return strings.ToLower(string(p.Status.Phase))
}

func (e *kubeEngine) RemoveStale(ctx context.Context) (int, error) {
	list, err := e.pods.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelKey + "=1"})
	if err != nil {
		return 0, fmt.Errorf("sandbox: listing codebridge Pods on %s: %w", e.name, err)
	}
	removed := 0
	var errs []error
	now := time.Now()
	for _, p := range list.Items {
		stale, why, err := e.staleReason(ctx, &p)
		if err == nil && !stale && endedBefore(&p, now.Add(-kubeEndedKeep)) {
			stale, why = true, "ended long ago, left by a bridge that did not remove it (killed, or its host gone)"
		}
		if err == nil && stale {
			err = e.remove(ctx, p.Name)
			if err == nil {
				removed++
				e.log.Info("removed a sandbox Pod "+why, "pod", p.Name)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// staleReason reports whether the owner sweep removes p and why. A
// session handle's Pod outlives the replica that made it (adopt.go): it is
// never stale while it runs, and stale as soon as it ended (its runtime's
// idle deadline passed with no bridge, or it died), since no replica owns
// it to read its end later.
func (e *kubeEngine) staleReason(ctx context.Context, p *corev1.Pod) (bool, string, error) {
	if detachable(p.Labels) {
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		return ended, "of a session handle, ended (its idle deadline passed with no bridge, or it died)", nil
	}
	stale, err := e.owner.stale(ctx, e.pods, p.Labels)
	return stale, "left by a bridge that is gone", err
}

// kubeEndedKeep is how long a sandbox Pod may stay after its container
// ended before any bridge of the namespace removes it. A bridge that
// runs removes its own ended Pods within seconds (once it has read how
// they ended); one that was killed cannot, and outside a cluster no
// owner reference lets the cluster do it, while the owner labels let
// only a bridge of the same host know that it is gone. An ended Pod is
// of no use to anyone: past this, whoever sweeps (a bridge starting,
// doctor, `codebridge workspace`) removes it.
const kubeEndedKeep = 5 * time.Minute

// endedBefore reports whether the Pod ended (its phase says so) before
// t: by its sandbox container's end, else the last change of its
// conditions. A Pod that shows no time is not judged.
func endedBefore(p *corev1.Pod, t time.Time) bool {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return false
	}
	var end time.Time
	if term := terminated(p); term != nil {
		end = term.FinishedAt.Time
	} else {
		for _, c := range p.Status.Conditions {
			if c.LastTransitionTime.After(end) {
				end = c.LastTransitionTime.Time
			}
		}
	}
	return !end.IsZero() && end.Before(t)
}

// remove deletes a Pod at once (no grace period). A Pod already gone is
// not an error.
func (e *kubeEngine) remove(ctx context.Context, name string) error {
	grace := int64(0)
	err := e.pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !isKubeNotFound(err) {
		return fmt.Errorf("sandbox: deleting Pod %s on %s: %w", name, e.name, err)
	}
	return nil
}

func isKubeNotFound(err error) bool { return err != nil && apierrors.IsNotFound(err) }

// Workspaces lists the workspace claims codebridge made in the
// namespace, by name, with the sandbox Pods that mount each now, and the
// digest of each one's principal (the claims keep neither the principal's
// name nor the project's path: see claimSpec).
func (e *kubeEngine) Workspaces(ctx context.Context) ([]engine.WorkspaceVolume, error) {
	list, err := e.claims.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelKey + "=1"})
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing the workspace claims on %s: %w", e.name, err)
	}
	// A claim shown unused while a Pod mounts it could be removed by
	// someone who trusted the listing: a failed list of Pods fails it.
	pods, err := e.pods.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelWorkspace})
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing the Pods that mount workspace claims on %s: %w", e.name, err)
	}
	used := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			used[p.Labels[engine.LabelWorkspace]]++
		}
	}
	out := make([]engine.WorkspaceVolume, 0, len(list.Items))
	for _, c := range list.Items {
		var principal string
		if d := c.Labels[engine.LabelPrincipal]; d != "" {
			principal = "sha256:" + d
		}
		out = append(out, engine.WorkspaceVolume{Name: c.Name, Principal: principal,
			Created: c.CreationTimestamp.UTC().Format(time.RFC3339), InUse: used[c.Name]})
	}
	slices.SortFunc(out, func(a, b engine.WorkspaceVolume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveWorkspace deletes a workspace claim codebridge made (the cluster
// removes its volume as the class's reclaim policy says). A claim that
// Pods mount is kept by the cluster until they end.
func (e *kubeEngine) RemoveWorkspace(ctx context.Context, name string) error {
	c, err := e.claims.Get(ctx, name, metav1.GetOptions{})
	if isKubeNotFound(err) {
		return fmt.Errorf("sandbox: there is no workspace claim %q on %s: `codebridge workspace` lists them", name, e.name)
	}
	if err != nil {
		return fmt.Errorf("sandbox: the workspace claim %q on %s: %w", name, e.name, err)
	}
	if c.Labels[engine.LabelKey] != "1" {
		return fmt.Errorf("sandbox: %q on %s: %w (it has no %s label); remove it with kubectl if you mean to", name, e.name, engine.ErrNotWorkspace, engine.LabelKey)
	}
	if err := e.claims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !isKubeNotFound(err) {
		return fmt.Errorf("sandbox: removing the workspace claim %q on %s: %w", name, e.name, err)
	}
	return nil
}

// kubeContainer is a sandbox Pod started by [kubeEngine], with the exec
// stream of its runtime (exec.go).
type kubeContainer struct {
	engine *kubeEngine
	name   string
	memory int64 // the memory limit, for the exit's words
	stdin  *io.PipeWriter
	stdout io.Reader
	stderr *engine.LogWriter  // the runtime's stderr, to the log (never believed: start.go)
	cancel context.CancelFunc // ends the exec stream

	// The exec stream's end: streamErr (the runtime's exit status, as
	// client-go words it) is valid once streamDone is closed.
	streamDone chan struct{}
	streamErr  error
	// oomKills is how many processes the Pod's memory cgroup had
	// killed when the runtime started (the start check's count; -1:
	// unknown).
	oomKills int

	removeOnce sync.Once
	removeErr  error
	removed    atomic.Bool // the bridge removes it: its end is not news
}

func (c *kubeContainer) ID() string            { return c.name }
func (c *kubeContainer) Stdout() io.Reader     { return c.stdout }
func (c *kubeContainer) Stdin() io.WriteCloser { return c.stdin }

// kubeExitWait is the least time Exited gives the cluster to report how a
// container ended when the runtime's exec stream ended without its exit
// status (the connection to the API server broke): the kubelet notices
// at its next relist (every second) and then updates the Pod's status
// through the API server, seconds later on a loaded node.
const kubeExitWait = 15 * time.Second

// Exited says how the runtime ended: a Pod ended from outside codebridge
// first; else the runtime's exit status from its exec stream, with the
// Pod's memory cgroup asked whether the kernel's out-of-memory killer
// struck; else, without a status, the Pod's container state, read again
// once the cluster has said (the kubelet may have marked it evicted in
// the same update, and that is then the reason, not the kill it caused).
func (c *kubeContainer) Exited(ctx context.Context, wait time.Duration) string {
	if outside := c.EndedOutside(ctx); outside != "" {
		return outside
	}
	if code, ok := c.runtimeExit(ctx, wait); ok {
		oom, known := c.oomKilled(ctx)
		return engine.ExitReason(oom, known, code, c.memory)
	}
	// The runtime's stderr is not the init's: code can write to it, so
	// none of its lines is believed (a fresh writer that saw nothing).
	why := engine.WaitEnded(ctx, max(wait, kubeExitWait), 50*time.Millisecond, &engine.LogWriter{}, c.ended, isKubeNotFound)
	if outside := c.EndedOutside(ctx); outside != "" {
		return outside
	}
	return why
}

// EndedOutside says whether something outside codebridge ended the Pod:
// it is gone, or being deleted, and the bridge did not remove it; or the
// node evicted it. One read of the Pod; "" when it shows none of these
// (yet: a kubelet that evicts writes the reason after the kill, which
// Exited reads again).
func (c *kubeContainer) EndedOutside(ctx context.Context) string {
	if c.removed.Load() {
		return ""
	}
	p, err := c.engine.pods.Get(ctx, c.name, metav1.GetOptions{})
	if isKubeNotFound(err) {
		return "its Pod " + c.name + " is gone: something outside codebridge deleted it (kubectl delete, a controller, or the node); " +
			"the sandbox was not at fault"
	}
	if err != nil {
		return ""
	}
	return outsideReason(p)
}

// outsideReason words what the Pod's status says ended it from outside:
// the kubelet's Evicted reason and message, a deletion (with the
// cluster's DisruptionTarget reason when it gave one), or "". The
// messages are the cluster's, clipped.
func outsideReason(p *corev1.Pod) string {
	var disruption string
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue {
			disruption = " (" + cond.Reason + ": " + engine.ClipText(cond.Message, 300) + ")"
		}
	}
	switch {
	case p.Status.Reason == "Evicted":
		return "the node evicted its Pod " + p.Name + ": " + engine.ClipText(p.Status.Message, 300) + "; the Pod's own limits were not what ended it"
	case p.DeletionTimestamp != nil:
		return "its Pod " + p.Name + " was deleted from outside codebridge at " + p.DeletionTimestamp.UTC().Format(time.RFC3339) + disruption +
			" (kubectl delete, a controller, or the node); the sandbox was not at fault"
	case disruption != "" && terminated(p) != nil:
		return "the cluster ended its Pod " + p.Name + disruption + "; the sandbox was not at fault"
	}
	return ""
}

// ended is how the sandbox container ended, or nil while it runs. The
// kubelet knows an out-of-memory kill where the runtime reports it;
// waitEnded reads the sandbox's init too.
func (c *kubeContainer) ended(ctx context.Context) (*engine.Ended, error) {
	p, err := c.engine.pods.Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	t := terminated(p)
	if t == nil {
		return nil, nil
	}
	code := int(t.ExitCode)
	if code == 0 && t.Signal > 0 {
		code = 128 + int(t.Signal)
	}
	return &engine.Ended{OOMKilled: t.Reason == "OOMKilled", Code: code, Memory: memoryLimit(p)}, nil
}

// terminated is the sandbox container's terminated state, or nil.
func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if p == nil {
		return nil
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == sandboxContainer {
			return s.State.Terminated
		}
	}
	return nil
}

// memoryLimit is the sandbox container's memory limit in bytes, or 0.
func memoryLimit(p *corev1.Pod) int64 {
	for _, c := range p.Spec.Containers {
		if c.Name == sandboxContainer {
			return c.Resources.Limits.Memory().Value()
		}
	}
	return 0
}

func (c *kubeContainer) Remove(ctx context.Context) error {
	c.removed.Store(true)
	c.removeOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
			c.stdin.CloseWithError(io.ErrClosedPipe)
		}
		c.removeErr = c.engine.remove(ctx, c.name)
	})
	return c.removeErr
}
