//go:build kubernetes

package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A persistent workspace on Kubernetes is a PersistentVolumeClaim: the
// workspace volume the local engines would get (one per project and
// principal, or one named) is a claim of that name, made a DNS label. It
// is made when missing, mounted at /workspace in place of the emptyDir,
// and outlives the sandbox Pods that mount it: only `codebridge
// workspace rm` removes it.

// claimPoll is how often a claim that is not bound yet is looked at: its
// phase, and its events, which say when it never will be.
const claimPoll = 100 * time.Millisecond

// claimName is the name of the claim of workspace volume source: source
// itself when it is a DNS label, else its letters and digits in lower
// case, joined by '-', and a digest of source, so that two names that
// differ only in what was dropped stay two claims. The name is data (a
// principal's name is part of it): nothing else is read from it.
func claimName(source string) string {
	if len(validation.IsDNS1123Label(source)) == 0 {
		return source
	}
	var b strings.Builder
	for _, r := range strings.ToLower(source) {
		if b.Len() >= 48 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	base := strings.TrimRight(b.String(), "-")
	if base == "" {
		base = "codebridge-ws"
	}
	sum := sha256.Sum256([]byte(source))
	return base + "-" + hex.EncodeToString(sum[:4])
}

// claimSpec is the claim of workspace ws: ReadWriteOnce, size bytes, of
// class (empty: the cluster's default), labelled as codebridge's and,
// when it is a principal's, with a digest of the principal
// ([principalDigest]). Anyone who may list claims in the namespace reads
// their labels and annotations, and the namespace is shared by every
// principal of the bridge (and perhaps by other teams' bridges): so
// neither the principal's name nor the project's path is kept on it. The
// claim's name keeps what the operator's commands use (`codebridge
// workspace here`, `rm NAME`): the project directory's last element,
// which is the bridge's (all its principals share it), and digests.
func claimSpec(name string, ws engine.Mount, class string, size resource.Quantity) *corev1.PersistentVolumeClaim {
	labels := map[string]string{engine.LabelKey: "1"}
	if p := ws.Labels[engine.LabelPrincipal]; p != "" {
		labels[engine.LabelPrincipal] = principalDigest(p)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

// principalDigest is the label value that stands for a principal (as
// the audit names it: "local", "token:NAME", "oauth:SUBJECT@ISSUER"):
// the first 32 hex digits of its SHA-256, which an operator who knows
// the name can compute (`printf %s token:alice | sha256sum | cut -c1-32`)
// and no one can read a name from.
func principalDigest(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return hex.EncodeToString(sum[:16])
}

// ensureClaim makes the claim of workspace ws unless it exists, and waits
// until a Pod can use it: bound, or left for the scheduler to bind with
// the Pod (a class that waits for the first consumer). It returns the
// claim's name.
func (e *kubeEngine) ensureClaim(ctx context.Context, ws engine.Mount) (string, error) {
	name := claimName(ws.Source)
	pvc, err := e.claims.Get(ctx, name, metav1.GetOptions{})
	if isKubeNotFound(err) {
		pvc, err = e.claims.Create(ctx, claimSpec(name, ws, e.storageClass, e.claimSize), metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err): // another bridge made it a moment ago
			pvc, err = e.claims.Get(ctx, name, metav1.GetOptions{})
		case err == nil:
			e.log.Info("created the workspace claim", "claim", name, "size", e.claimSize.String())
		}
	}
	if err != nil {
		return "", fmt.Errorf("sandbox: the workspace claim %s on %s: %w%s", name, e.name, err, claimHint(err))
	}
	return name, e.waitClaim(ctx, pvc)
}

// claimHint explains a claim the API server refused.
func claimHint(err error) string {
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "quota"):
		return " (a ResourceQuota of the namespace is used up: raise it, lower CODEBRIDGE_WORKSPACE_SIZE, remove old workspaces " +
			"with `codebridge workspace rm`, or give --workspace ephemeral)"
	case apierrors.IsForbidden(err):
		return " (the bridge's Role must grant create, get and list on persistentvolumeclaims: see deploy/kubernetes/rbac.yaml)"
	}
	return ""
}

// claimReady reads a claim and its events: done with no reason when a
// Pod can mount it now (bound, or waiting for its first consumer);
// done with the reason when it will not bind by itself (no class and
// no volume, a class that cannot provision, a volume lost).
func claimReady(pvc *corev1.PersistentVolumeClaim, events []corev1.Event) (done bool, why string) {
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		return true, ""
	case corev1.ClaimLost:
		return true, "its volume is lost"
	}
	for _, ev := range events {
		switch ev.Reason {
		case "WaitForFirstConsumer":
			return true, ""
		case "FailedBinding", "ProvisioningFailed":
			return true, "the controller reports " + ev.Reason
		}
	}
	return false, ""
}

// waitClaim waits until the claim can be mounted, and fails as soon as
// its events show that it will not bind, with those events in the
// message. There is no timeout of its own: ctx (the session's start
// timeout) bounds it.
func (e *kubeEngine) waitClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for {
		var events []corev1.Event
		if pvc.Status.Phase != corev1.ClaimBound {
			events = e.objectEvents(ctx, pvc.Name, pvc.UID)
		}
		if done, why := claimReady(pvc, events); done {
			if why == "" {
				return nil
			}
			return e.claimFails(pvc, events, why)
		}
		select {
		case <-ctx.Done():
			return e.claimFails(pvc, e.objectEvents(context.WithoutCancel(ctx), pvc.Name, pvc.UID),
				"it was not bound when the start timed out ("+ctx.Err().Error()+")")
		case <-tick.C:
		}
		next, err := e.claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("sandbox: the workspace claim %s on %s: %w", pvc.Name, e.name, err)
		}
		pvc = next
	}
}

// claimFails is the error of a workspace claim that will not bind: why,
// its events, and what to do.
func (e *kubeEngine) claimFails(pvc *corev1.PersistentVolumeClaim, events []corev1.Event, why string) error {
	msg := fmt.Sprintf("sandbox: the workspace claim %s on %s cannot be bound: %s", pvc.Name, e.name, why)
	if ev := eventText(events); ev != "" {
		msg += "; its events: " + ev
	}
	return fmt.Errorf("%s; give the namespace a StorageClass that can provision it (--storage-class, or a default class), "+
		"or a PersistentVolume it can bind, or give --workspace ephemeral", msg)
}

// checkStorageClass makes sure, when no class is named, that the cluster
// has a default one: it asks the API server to make a claim without
// keeping it (a dry run), and the class the server's admission gives it
// is the default. Without one, a claim would never bind.
func (e *kubeEngine) checkStorageClass(ctx context.Context) error {
	if e.storageClass != "" {
		return nil
	}
	probe := claimSpec("", engine.Mount{}, "", e.claimSize)
	probe.GenerateName = "codebridge-probe-"
	got, err := e.claims.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return fmt.Errorf("sandbox: %s refused a trial workspace claim (a dry run): %w%s", e.name, err, claimHint(err))
	}
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName == "" {
		return fmt.Errorf("sandbox: %s has no default StorageClass, so the persistent workspace (a PersistentVolumeClaim per principal) "+
			"cannot be made: name a class with --storage-class (CODEBRIDGE_STORAGE_CLASS), or give --workspace ephemeral", e.name)
	}
	return nil
}

// claimOf is the workspace claim a sandbox Pod mounts, or "".
func claimOf(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}
