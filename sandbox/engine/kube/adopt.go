//go:build kubernetes

package kube

import (
	"context"
	"fmt"
	"io"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A detachable sandbox Pod ([engine.ContainerSpec.Detachable], a session
// handle's) outlives the bridge replica that started it: any replica of the
// namespace can adopt it ([kubeEngine.Exec]). So it carries no owner
// reference to the replica's Pod (the cluster would delete it with that
// replica) and the owner sweep leaves it alone while it runs (its owner's
// death is no sign that nobody needs it). What ends it is its own: the
// runtime ends itself after its idle deadline with no bridge, the Pod's
// init (kubeInitSource) exits once no process but itself is left, and the
// ended Pod is deleted by its holder, or by any replica's sweep once it
// has been over for kubeEndedKeep (RemoveStale). The runtime the bridge
// started through pods/exec keeps running when that exec stream ends: the
// container runtime does not kill an exec'd process whose client went away
// (it only closes its stdin), which a detachable runtime takes as its
// bridge's end.

// detachable reports whether a Pod with these labels is a session
// handle's sandbox, which no replica owns.
func detachable(labels map[string]string) bool { return labels[engine.LabelHandle] != "" }

// ownedBy reports whether a Pod with these labels carries every one of
// the owner labels: a sandbox this bridge started.
func ownedBy(labels, owner map[string]string) bool {
	for k, v := range owner {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Exec runs cmd (the resume relay) in the running sandbox Pod id, which
// another replica may have started, through pods/exec, and returns a
// Container whose streams are cmd's ([engine.Adopter]). Its Remove deletes
// the Pod; its Detach ends only this stream. A Pod that is neither a
// detachable codebridge sandbox nor one this bridge started (a stdio
// session's, whose fork the relay reaches) is refused.
func (e *kubeEngine) Exec(ctx context.Context, id string, cmd []string) (engine.Container, error) {
	p, err := e.pods.Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading sandbox Pod %s on %s: %w", id, e.name, err)
	}
	reachable := detachable(p.Labels) || ownedBy(p.Labels, e.owner.labels())
	if p.Labels[engine.LabelKey] != "1" || !reachable || p.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("sandbox: Pod %s on %s is neither a running detachable codebridge sandbox nor one this bridge started: it cannot be adopted", id, e.name)
	}
	c := &kubeContainer{engine: e, name: p.Name, memory: memoryLimit(p), oomKills: -1,
		stderr: engine.NewLogWriter("sandbox relay: ", engine.ContainerLogBudget, e.log.With("pod", p.Name))}
	if err := c.exec(cmd); err != nil {
		return nil, fmt.Errorf("sandbox: starting the resume relay in Pod %s on %s (pods/exec): %w", id, e.name, err)
	}
	return c, nil
}

// Detach ends this bridge's exec stream and leaves the Pod and its
// runtime running, for another replica to adopt ([engine.Detacher]).
// Remove still deletes the Pod afterwards.
func (c *kubeContainer) Detach() {
	if c.cancel != nil {
		c.cancel()
		c.stdin.CloseWithError(io.ErrClosedPipe)
	}
}
