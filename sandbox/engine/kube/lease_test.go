//go:build kubernetes

package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")

// versioned makes the fake clientset keep Leases' resourceVersions as an
// API server does: each write gives a new one, and an update or delete
// that names another than the stored one fails with a conflict, and an
// update that names none is invalid (the API server requires one for a
// Lease). The fake's own tracker does not check them.
func versioned(cs *fake.Clientset) {
	var mu sync.Mutex
	n := 0
	next := func() string { n++; return strconv.Itoa(n) }
	stored := func(ns, name string) (*coordinationv1.Lease, error) {
		o, err := cs.Tracker().Get(leasesGVR, ns, name)
		if err != nil {
			return nil, err
		}
		return o.(*coordinationv1.Lease), nil
	}
	conflict := func(name string) error {
		return apierrors.NewConflict(leasesGVR.GroupResource(), name, errors.New("the object has been modified"))
	}
	cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.ResourceVersion = next()
		return true, l, cs.Tracker().Create(leasesGVR, l, a.GetNamespace())
	})
	cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := stored(a.GetNamespace(), l.Name)
		if err != nil {
			return true, nil, err
		}
		if l.ResourceVersion == "" {
			return true, nil, apierrors.NewInvalid(coordinationv1.SchemeGroupVersion.WithKind("Lease").GroupKind(), l.Name, nil)
		}
		if l.ResourceVersion != cur.ResourceVersion {
			return true, nil, conflict(l.Name)
		}
		l.ResourceVersion = next()
		return true, l, cs.Tracker().Update(leasesGVR, l, a.GetNamespace())
	})
	cs.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		d := a.(k8stesting.DeleteAction)
		cur, err := stored(a.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		if p := d.GetDeleteOptions().Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion {
			return true, nil, conflict(d.GetName())
		}
		return true, nil, cs.Tracker().Delete(leasesGVR, a.GetNamespace(), d.GetName())
	})
}

// testLeases is a replica's Lease layer over cs, named id.
func testLeases(t *testing.T, cs *fake.Clientset, id string) *Leases {
	t.Helper()
	l, err := newLeases(cs.CoordinationV1().Leases("ns"), cs.CoreV1().Pods("ns"),
		LeaseOptions{Namespace: "ns", Identity: id, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newVersioned is a fake clientset whose Leases keep resourceVersions.
func newVersioned() *fake.Clientset {
	cs := fake.NewClientset()
	versioned(cs)
	return cs
}

func getLease(t *testing.T, cs *fake.Clientset, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// holderOf is the holder a HeldError names, or "" for another answer.
func holderOf(err error) string {
	var held *HeldError
	if errors.As(err, &held) {
		return held.Holder
	}
	return ""
}

const testDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"

// TestLeaseTakeMakesALabelledLease: the first take creates the handle's
// Lease, named validly from the digest, labelled as its Pod is, held by
// the replica for the default duration.
func TestLeaseTakeMakesALabelledLease(t *testing.T) {
	cs := newVersioned()
	h, err := testLeases(t, cs, "bridge-a_1").Take(context.Background(), testDigest)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.End(context.Background()) }() // the test ends it either way; its own checks come first
	l := getLease(t, cs, h.Name())
	if !strings.HasPrefix(l.Name, leasePrefix) || len(l.Name) != len(leasePrefix)+40 || len(validation.IsDNS1123Subdomain(l.Name)) > 0 {
		t.Errorf("Lease name %q", l.Name)
	}
	if l.Labels[engine.LabelKey] != "1" || l.Labels[engine.LabelHandle] != testDigest {
		t.Errorf("labels %v", l.Labels)
	}
	if *l.Spec.HolderIdentity != "bridge-a_1" || *l.Spec.LeaseDurationSeconds != int32(DefaultLeaseDuration/time.Second) || *l.Spec.LeaseTransitions != 0 {
		t.Errorf("spec %+v", l.Spec)
	}
}

// TestLeaseRefusesBadDigests: a digest that is no label value is refused
// before anything is written; any label value gives a valid name.
func TestLeaseRefusesBadDigests(t *testing.T) {
	cs := newVersioned()
	l := testLeases(t, cs, "a")
	for _, d := range []string{"", "../x", "a b", strings.Repeat("a", 64), "-a"} {
		if _, err := l.Take(context.Background(), d); err == nil || !strings.Contains(err.Error(), "label value") {
			t.Errorf("digest %q: %v", d, err)
		}
	}
	if list, _ := cs.CoordinationV1().Leases("ns").List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("%d Leases written for bad digests", len(list.Items))
	}
	for _, d := range []string{"ab", "A.b_C-9", testDigest} {
		if n := LeaseName(d); len(validation.IsDNS1123Subdomain(n)) > 0 || len(validation.IsDNS1123Label(n)) > 0 {
			t.Errorf("LeaseName(%q) = %q is not a DNS-1123 label", d, n)
		}
	}
}

// TestLeaseHeldIsRefused: while a replica holds the Lease, another's
// take is refused with an error naming the holder, and so is a second
// take by the holder itself; nothing is written.
func TestLeaseHeldIsRefused(t *testing.T) {
	cs := newVersioned()
	a, b := testLeases(t, cs, "bridge-a_1"), testLeases(t, cs, "bridge-b_2")
	h, err := a.Take(context.Background(), testDigest)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.End(context.Background()) }() // the test ends it either way; its own checks come first
	before := getLease(t, cs, h.Name()).ResourceVersion
	_, err = b.Take(context.Background(), testDigest)
	if holderOf(err) != "bridge-a_1" || !strings.Contains(err.Error(), `"bridge-a_1"`) {
		t.Errorf("take of a held Lease: %v", err)
	}
	if _, err = a.Take(context.Background(), testDigest); holderOf(err) != "bridge-a_1" {
		t.Errorf("second take by the holder: %v", err)
	}
	if after := getLease(t, cs, h.Name()).ResourceVersion; after != before {
		t.Errorf("refused takes wrote the Lease (%s -> %s)", before, after)
	}
}

// interleave is a leaseClient that runs between, once, just before its
// first write (Create or Update): another replica's whole take lands
// between this one's read and its write.
type interleave struct {
	leaseClient
	once    sync.Once
	between func()
}

func (i *interleave) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	i.once.Do(i.between)
	return i.leaseClient.Create(ctx, l, o)
}

func (i *interleave) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	i.once.Do(i.between)
	return i.leaseClient.Update(ctx, l, o)
}

// TestLeaseRaceBetweenReadAndWrite: attacker side. Replica B's take
// lands between replica A's read and A's write, both when the Lease is
// missing (A's create meets B's) and when it has expired (A's update
// carries a resourceVersion B's write made stale): B wins, A is refused
// naming B, and the Lease says B.
func TestLeaseRaceBetweenReadAndWrite(t *testing.T) {
	for _, expired := range []bool{false, true} {
		t.Run(map[bool]string{false: "missing", true: "expired"}[expired], func(t *testing.T) {
			cs := newVersioned()
			if expired {
				old := metav1.NewMicroTime(time.Now().Add(-time.Hour))
				id, secs := "bridge-dead_0", int32(15)
				_, err := cs.CoordinationV1().Leases("ns").Create(context.Background(), &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: LeaseName(testDigest), Namespace: "ns", Labels: leaseLabels(testDigest)},
					Spec:       coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, RenewTime: &old, AcquireTime: &old},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
			}
			a, b := testLeases(t, cs, "bridge-a_1"), testLeases(t, cs, "bridge-b_2")
			var hb *Held
			var errB error
			a.leases = &interleave{leaseClient: a.leases, between: func() { hb, errB = b.Take(context.Background(), testDigest) }}
			_, errA := a.Take(context.Background(), testDigest)
			if errB != nil {
				t.Fatalf("B, between A's read and write: %v", errB)
			}
			defer func() { _ = hb.End(context.Background()) }() // the test ends it either way; its own checks come first
			if holderOf(errA) != "bridge-b_2" {
				t.Errorf("A, whose write came second: %v", errA)
			}
			if got := *getLease(t, cs, hb.Name()).Spec.HolderIdentity; got != "bridge-b_2" {
				t.Errorf("holder %q", got)
			}
		})
	}
}

// TestLeaseRaceManyTakers: attacker side. Four replicas take one
// handle's Lease at once, 20 times over (the Lease missing, then
// released): each time exactly one wins and the others are refused
// naming the winner.
func TestLeaseRaceManyTakers(t *testing.T) {
	cs := newVersioned()
	var replicas []*Leases
	for i := range 4 {
		replicas = append(replicas, testLeases(t, cs, "bridge-"+strconv.Itoa(i)))
	}
	for round := range 20 {
		held := make([]*Held, len(replicas))
		errs := make([]error, len(replicas))
		var wg sync.WaitGroup
		for i, r := range replicas {
			wg.Go(func() { held[i], errs[i] = r.Take(context.Background(), testDigest) })
		}
		wg.Wait()
		var winner *Held
		for i, h := range held {
			if h != nil {
				if winner != nil {
					t.Fatalf("round %d: two replicas hold the Lease", round)
				}
				winner = h
			} else if holderOf(errs[i]) == "" {
				t.Errorf("round %d, replica %d: %v", round, i, errs[i])
			}
		}
		if winner == nil {
			t.Fatalf("round %d: no winner: %v", round, errs)
		}
		if err := winner.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaseRenewalKeepsItAndExpiryFreesIt: a held Lease is renewed
// while its holder lives, so another replica is refused long past the
// first duration; once the holder stops renewing (it died), the other
// replica is refused until renewTime + duration and takes it then.
func TestLeaseRenewalKeepsItAndExpiryFreesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := newVersioned()
		a, b := testLeases(t, cs, "bridge-a_1"), testLeases(t, cs, "bridge-b_2")
		h, err := a.Take(context.Background(), testDigest)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * DefaultLeaseDuration)
		synctest.Wait()
		if _, err = b.Take(context.Background(), testDigest); holderOf(err) != "bridge-a_1" {
			t.Fatalf("take while the holder renews: %v", err)
		}
		l := getLease(t, cs, h.Name())
		if !l.Spec.RenewTime.After(l.Spec.AcquireTime.Add(2 * DefaultLeaseDuration)) {
			t.Errorf("renewTime %s, acquired %s: not renewed", l.Spec.RenewTime, l.Spec.AcquireTime)
		}
		h.Abandon() // the holder dies: no more renewals, nothing released
		expiry := getLease(t, cs, h.Name()).Spec.RenewTime.Add(DefaultLeaseDuration)
		time.Sleep(time.Until(expiry) - time.Microsecond)
		if _, err = b.Take(context.Background(), testDigest); holderOf(err) != "bridge-a_1" {
			t.Fatalf("take just before expiry: %v", err)
		}
		time.Sleep(time.Millisecond)
		hb, err := b.Take(context.Background(), testDigest)
		if err != nil {
			t.Fatalf("take after expiry: %v", err)
		}
		if l := getLease(t, cs, hb.Name()); *l.Spec.HolderIdentity != "bridge-b_2" || *l.Spec.LeaseTransitions != 1 {
			t.Errorf("after the take: %+v", l.Spec)
		}
		if err := hb.End(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLeaseLostWhenAnotherHolds: attacker side. Another replica writes
// itself into a Lease this one holds (a replica whose clock runs ahead):
// the holder's next renewal finds it, Lost closes within one renew
// period, and the holder's Release leaves the other's hold alone.
func TestLeaseLostWhenAnotherHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := newVersioned()
		h, err := testLeases(t, cs, "bridge-a_1").Take(context.Background(), testDigest)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Abandon() // stops the renewals however the test ends
		l := getLease(t, cs, h.Name())
		other := "bridge-ahead_9"
		l.Spec.HolderIdentity = &other
		if _, err = cs.CoordinationV1().Leases("ns").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select { // the bubble's clock: the renewal at +DefaultLeaseRenew runs before it moves on
		case <-h.Lost():
		case <-time.After(DefaultLeaseRenew + time.Millisecond):
			t.Fatal("Lost is open one renew period after another replica took the Lease")
		}
		if err := h.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := getLease(t, cs, h.Name()).Spec.HolderIdentity; got == nil || *got != other {
			t.Errorf("after the loser's Release the holder is %v", got)
		}
	})
}

// TestLeaseGivenUpWhenRenewalsFail: when the API server refuses every
// renewal, the holder gives the Lease up (Lost) before another replica
// may take it: before renewTime + duration.
func TestLeaseGivenUpWhenRenewalsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := newVersioned()
		// Installed before the take (the fake's reactors may not change
		// while a renewal reads them), refusing once the take is done.
		var away atomic.Bool
		cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			if away.Load() {
				return true, nil, apierrors.NewServiceUnavailable("etcd is away")
			}
			return false, nil, nil
		})
		h, err := testLeases(t, cs, "bridge-a_1").Take(context.Background(), testDigest)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Abandon() // stops the renewals however the test ends
		taken := getLease(t, cs, h.Name()).Spec.RenewTime.Time
		away.Store(true)
		select {
		case <-h.Lost():
		case <-time.After(2 * DefaultLeaseDuration):
			t.Fatal("Lost is open long after the Lease expired with no renewal")
		}
		if !time.Now().Before(taken.Add(DefaultLeaseDuration)) {
			t.Errorf("Lost closed at %s, not before the Lease could be taken (%s)", time.Now(), taken.Add(DefaultLeaseDuration))
		}
	})
}

// TestLeaseReleaseAndEnd: a released Lease has no holder and another
// replica takes it at once; an ended one is deleted.
func TestLeaseReleaseAndEnd(t *testing.T) {
	cs := newVersioned()
	a, b := testLeases(t, cs, "bridge-a_1"), testLeases(t, cs, "bridge-b_2")
	h, err := a.Take(context.Background(), testDigest)
	if err != nil {
		t.Fatal(err)
	}
	if err = h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	default:
		t.Error("Lost is open after Release")
	}
	if l := getLease(t, cs, h.Name()); l.Spec.HolderIdentity != nil {
		t.Errorf("holder after Release: %q", *l.Spec.HolderIdentity)
	}
	hb, err := b.Take(context.Background(), testDigest)
	if err != nil {
		t.Fatalf("take of a released Lease: %v", err)
	}
	if err = hb.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err = cs.CoordinationV1().Leases("ns").Get(context.Background(), hb.Name(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Lease after End: %v", err)
	}
}

// TestLeaseSweep: the sweep removes the Leases of handles whose Pod is
// gone or ended, unless a replica holds them (a new handle's Lease comes
// before its Pod), and leaves alone Leases codebridge did not make.
func TestLeaseSweep(t *testing.T) {
	cs := newVersioned()
	ctx := context.Background()
	l := testLeases(t, cs, "bridge-a_1")
	free := func(digest string) string {
		h, err := l.Take(ctx, digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return h.Name()
	}
	pod := func(name, digest string, phase corev1.PodPhase) {
		_, err := cs.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{engine.LabelKey: "1", engine.LabelHandle: digest}},
			Status:     corev1.PodStatus{Phase: phase},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	gone, running, ended := free("gone"), free("running"), free("ended")
	pod("p1", "running", corev1.PodRunning)
	pod("p2", "ended", corev1.PodSucceeded)
	held, err := l.Take(ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.End(ctx) }() // the test ends it either way; its own checks come first
	_, err = cs.CoordinationV1().Leases("ns").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: "ns"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.Sweep(ctx)
	if err != nil || n != 2 {
		t.Errorf("Sweep: %d, %v; want 2", n, err)
	}
	for name, want := range map[string]bool{gone: false, ended: false, running: true, held.Name(): true, "someone-else": true} {
		_, err := cs.CoordinationV1().Leases("ns").Get(ctx, name, metav1.GetOptions{})
		if (err == nil) != want {
			t.Errorf("Lease %s: kept %v, want %v (%v)", name, err == nil, want, err)
		}
	}
}

// TestLeaseOptionsChecked: an identity is required and the renew
// period must be shorter than a whole-second duration.
func TestLeaseOptionsChecked(t *testing.T) {
	cs := fake.NewClientset()
	for _, o := range []LeaseOptions{
		{},
		{Identity: "a", Duration: 1500 * time.Millisecond},
		{Identity: "a", Duration: 5 * time.Second, Renew: 5 * time.Second},
		{Identity: "a", Renew: -time.Second},
	} {
		if _, err := newLeases(cs.CoordinationV1().Leases("ns"), cs.CoreV1().Pods("ns"), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if id := LeaseIdentity("bridge-7f9"); !strings.HasPrefix(id, "bridge-7f9_") || id == LeaseIdentity("bridge-7f9") {
		t.Errorf("identity %q is not the Pod's name with a random suffix", id)
	}
}
