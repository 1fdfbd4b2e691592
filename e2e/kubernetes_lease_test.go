//go:build kubernetes

package e2e

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine/kube"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKubernetesLeaseOneHolderPerHandle: attacker side, two replicas
// racing for one Lease. Two bridge replicas' Lease layers (two
// identities in this process, each acting as a service account bound to
// exactly the Role of deploy/kubernetes/rbac.yaml) take one handle's
// Lease at the same moment, 20 times over (the Lease missing on even
// rounds, released on odd ones): exactly one wins each time, and the
// other is refused naming the winner. The holder's renewals keep the
// Lease past its first duration; once the holder stops renewing (as a
// replica that dies), the other is refused until the Lease expires and
// takes it then. The sweep removes the Lease once free with no Pod, and
// no Lease of the handle is left.
func TestKubernetesLeaseOneHolderPerHandle(t *testing.T) {
	kubeOnly(t)
	ctx := context.Background()
	ns := os.Getenv("CODEBRIDGE_NAMESPACE")
	admin, err := kubeClient()
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	var rb rbacv1.RoleBinding
	readYAML(t, "rbac.yaml", &role, &rb)
	cfg, err := clientcmd.BuildConfigFromFlags("", accountKubeconfig(t, role.Rules))
	if err != nil {
		t.Fatal(err)
	}
	replicas := [2]*kube.Leases{}
	for i, pod := range []string{"bridge-a", "bridge-b"} {
		if replicas[i], err = kube.NewLeases(cfg, kube.LeaseOptions{Namespace: ns, Identity: kube.LeaseIdentity(pod)}); err != nil {
			t.Fatal(err)
		}
	}
	digest := newDigest(t)
	t.Cleanup(func() {
		logDelete(t, "the Lease", admin.CoordinationV1().Leases(ns).Delete(context.Background(), kube.LeaseName(digest), metav1.DeleteOptions{}))
	})

	for round := range 20 {
		winner := raceForLease(t, replicas, digest, round)
		if round%2 == 0 {
			err = winner.Release(ctx)
		} else {
			err = winner.End(ctx)
		}
		if err != nil {
			t.Fatalf("round %d: letting the Lease go: %v", round, err)
		}
	}
	renewedThenExpired(t, admin, replicas[0], replicas[1], digest)

	// Free, and no sandbox Pod carries the handle: the sweep removes it.
	if _, err = replicas[0].Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := admin.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelHandle + "=" + digest})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d Lease(s) of the handle left after the sweep", len(left.Items))
	}
}

// renewedThenExpired has replica a take digest's Lease and checks that
// its renewals keep it from replica b past its first duration, and that
// once a stops renewing b is refused until renewTime + duration and
// takes it then. It leaves the Lease released.
func renewedThenExpired(t *testing.T, admin *kubernetes.Clientset, a, b *kube.Leases, digest string) {
	t.Helper()
	ctx := context.Background()
	ns, name := os.Getenv("CODEBRIDGE_NAMESPACE"), kube.LeaseName(digest)
	held, err := a.Take(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	if holder := waitRenewedPast(t, admin, ns, name); holder != a.Identity() {
		t.Fatalf("the Lease is held by %q, not by the replica that took it (%q)", holder, a.Identity())
	}
	if _, err = b.Take(ctx, digest); !heldBy(err, a.Identity()) {
		t.Fatalf("a take while the holder renews (past its first duration): %v", err)
	}
	held.Abandon()
	_, err = b.Take(ctx, digest)
	var refused *kube.HeldError
	if !errors.As(err, &refused) {
		t.Fatalf("a take just after the holder stopped renewing: %v", err)
	}
	lease, err := admin.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expiry := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	if !refused.Until.Equal(expiry) {
		t.Errorf("the refusal says the Lease runs until %s; its renewTime + duration is %s", refused.Until, expiry)
	}
	time.Sleep(time.Until(expiry)) // waiting for the clock, not for an event: expiry is none
	took, err := b.Take(ctx, digest)
	if err != nil {
		t.Fatalf("a take after the Lease expired: %v", err)
	}
	if err = took.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// raceForLease has the replicas take digest's Lease at the same moment
// and returns the one winner, failing the test unless there is exactly
// one and the others are refused naming it.
func raceForLease(t *testing.T, replicas [2]*kube.Leases, digest string, round int) *kube.Held {
	t.Helper()
	held := make([]*kube.Held, len(replicas))
	errs := make([]error, len(replicas))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() {
			<-start
			held[i], errs[i] = r.Take(context.Background(), digest)
		})
	}
	close(start)
	wg.Wait()
	var winner *kube.Held
	won := ""
	for i, h := range held {
		if h != nil && winner != nil {
			t.Fatalf("round %d: both replicas hold the Lease", round)
		}
		if h != nil {
			winner, won = h, replicas[i].Identity()
		}
	}
	if winner == nil {
		t.Fatalf("round %d: no replica took the Lease: %v", round, errs)
	}
	for i, h := range held {
		if h == nil && !heldBy(errs[i], won) {
			t.Fatalf("round %d: the loser of the race for %s is not refused naming %s: %v", round, winner.Name(), won, errs[i])
		}
	}
	return winner
}

// waitRenewedPast watches Lease name until its holder has renewed it
// past the end of its first duration (acquireTime + duration), and
// returns the holder.
func waitRenewedPast(t *testing.T, cs *kubernetes.Clientset, ns, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*kube.DefaultLeaseDuration)
	defer cancel()
	w, err := cs.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		l, ok := ev.Object.(*coordinationv1.Lease)
		if !ok || l.Spec.HolderIdentity == nil || l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil {
			continue
		}
		d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		if l.Spec.RenewTime.After(l.Spec.AcquireTime.Add(d)) {
			return *l.Spec.HolderIdentity
		}
	}
	t.Fatalf("Lease %s was not renewed past its first %s within %s", name, kube.DefaultLeaseDuration, 4*kube.DefaultLeaseDuration)
	return ""
}

// heldBy reports whether err is a refusal naming holder.
func heldBy(err error, holder string) bool {
	var refused *kube.HeldError
	return errors.As(err, &refused) && refused.Holder == holder
}
