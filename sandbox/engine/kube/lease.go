//go:build kubernetes

package kube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// A Lease per session handle (coordination.k8s.io/v1) says which bridge
// replica holds the handle's channel to its sandbox Pod. A replica takes
// the Lease before it attaches to the Pod, renews it while it holds it,
// and stops using the channel as soon as a renewal finds another holder
// or renewals have failed until one renew period before the Lease
// expires.
//
// Expiry is judged by the taker's clock against the renewTime the holder
// wrote with its own: the API server stamps no time of its own on a
// Lease that a client can read back at that precision. This assumes the
// replicas' clocks agree to well within the margin between the Lease
// duration and the renew period (10 s with the defaults), as NTP keeps a
// cluster's nodes: a clock off by less only moves the moment another
// replica may take an abandoned Lease. A taker whose clock runs ahead by
// more could take a
// Lease its holder still renews; the holder then finds the other holder
// at its next renewal (Lost) within one renew period, and resourceVersion
// preconditions make sure only one of them wins each write.
//
// client-go's leaderelection/resourcelock is not used: it imports the
// generated clientset's scheme, which registers every API group of
// Kubernetes (about 110 more packages) when the program starts: measured
// on `codebridge --version` with the engine built in, 16 MB more binary
// (56.4 MB against 40.5 MB) and 8 MB more peak RSS (30.6 MB against
// 22.6 MB), where this file adds 72 kB and nothing measurable. And it
// is built for one long-lived election per process, not a Lease per
// handle taken on demand. The Lease API is small enough to drive
// directly.

// Defaults of a Lease's timing, stated once: how long a Lease holds
// without renewal, and how often its holder renews it.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultLeaseRenew    = 5 * time.Second
)

// leasePrefix starts the name of every handle's Lease.
const leasePrefix = "codebridge-h-"

// leaseClient is what the Lease layer does with Leases. Its methods are
// those of client-go's typed LeaseInterface, so tests can give the fake
// clientset's.
type leaseClient interface {
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error)
}

// LeaseOptions configure [NewLeases].
type LeaseOptions struct {
	// Namespace is the sandboxes' namespace, where the Leases are kept.
	Namespace string
	// Identity names this replica in the Leases it holds: unique per
	// process ([LeaseIdentity]).
	Identity string
	// Duration is how long a Lease holds without renewal; zero means
	// [DefaultLeaseDuration]. Whole seconds (the Lease field is).
	Duration time.Duration
	// Renew is how often a held Lease is renewed; zero means
	// [DefaultLeaseRenew]. It must be shorter than Duration.
	Renew time.Duration
	// Log receives what happens to held Leases; nil means slog.Default().
	Log *slog.Logger
}

// Leases takes the Leases of session handles for one replica.
type Leases struct {
	leases   leaseClient
	pods     podClient
	ns       string
	id       string
	duration time.Duration
	renew    time.Duration
	log      *slog.Logger
}

// leaseCodecs is the scheme of the coordination group (Leases and the
// options of its requests), made on first use.
var leaseCodecs = sync.OnceValues(func() (*runtime.Scheme, serializer.CodecFactory) {
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		panic(err) // static registration: cannot fail
	}
	return s, serializer.NewCodecFactory(s)
})

// NewLeases makes the Lease layer of a replica that reaches the cluster
// with cfg.
func NewLeases(cfg *rest.Config, o LeaseOptions) (*Leases, error) {
	_, codecs := leaseCodecs()
	lc, err := groupClient(cfg, coordinationv1.SchemeGroupVersion, "/apis", codecs)
	if err != nil {
		return nil, fmt.Errorf("sandbox: a client of the coordination.k8s.io API: %w", err)
	}
	pc, err := coreClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: a client of the core API: %w", err)
	}
	return newLeases(restLeases{c: lc, ns: o.Namespace}, restPods{c: pc, ns: o.Namespace}, o)
}

// newLeases is [NewLeases] with its clients given.
func newLeases(lc leaseClient, pc podClient, o LeaseOptions) (*Leases, error) {
	l := &Leases{leases: lc, pods: pc, ns: o.Namespace, id: o.Identity, duration: o.Duration, renew: o.Renew, log: o.Log}
	if l.duration == 0 {
		l.duration = DefaultLeaseDuration
	}
	if l.renew == 0 {
		l.renew = DefaultLeaseRenew
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	switch {
	case l.id == "":
		return nil, errors.New("sandbox: the Lease layer needs this replica's identity (kube.LeaseIdentity)")
	case l.duration < time.Second || l.duration%time.Second != 0:
		return nil, fmt.Errorf("sandbox: a Lease duration must be whole seconds, at least one (got %s)", l.duration)
	case l.renew <= 0 || l.renew >= l.duration:
		return nil, fmt.Errorf("sandbox: a Lease's renew period (%s) must be positive and shorter than its duration (%s)", l.renew, l.duration)
	}
	return l, nil
}

// Identity is this replica's identity in the Leases it holds.
func (l *Leases) Identity() string { return l.id }

// LeaseIdentity is a replica's identity in the Leases it holds: its Pod's
// name (the host name when pod is empty) and a random suffix, so that a
// replica restarted in the same Pod is another holder.
func LeaseIdentity(pod string) string {
	if pod == "" {
		pod, _ = os.Hostname()
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return pod + "_" + hex.EncodeToString(b[:])
}

// LeaseName is the name of the Lease of the handle whose digest is
// given: a fixed prefix and 40 hex digits of the digest's SHA-256, so
// that any digest a label can carry gives a valid object name.
func LeaseName(digest string) string {
	sum := sha256.Sum256([]byte(digest))
	return leasePrefix + hex.EncodeToString(sum[:])[:40]
}

// HeldError is [Leases.Take]'s refusal when another replica holds the
// handle's Lease and renews it.
type HeldError struct {
	// Holder is the identity of the replica that holds the Lease.
	Holder string
	// Until is when the Lease expires unless its holder renews it.
	Until time.Time
}

// Unwrap makes a HeldError an [engine.ErrHeld].
func (e *HeldError) Unwrap() error { return engine.ErrHeld }

func (e *HeldError) Error() string {
	return fmt.Sprintf("sandbox: the session is held by bridge replica %q, whose Lease runs until %s unless it renews it: "+
		"send the call to that replica, or retry after then", e.Holder, e.Until.UTC().Format(time.RFC3339))
}

// errRaced says that another replica wrote the Lease between this
// replica's read and its write.
var errRaced = errors.New("another replica changed the session's Lease at the same time")

// Take makes this replica the holder of the Lease of the handle whose
// digest is given: it creates the Lease, or takes it when it is free or
// expired, and renews it until [Held.Release], [Held.End], [Held.Abandon]
// or its loss. It refuses with a [*HeldError] while another replica (or
// another [Held] of this one) holds it. When another replica writes the
// Lease at the same moment, Take reads it once more and judges again: of
// replicas racing for one Lease, exactly one wins.
func (l *Leases) Take(ctx context.Context, digest string) (*Held, error) {
	h, _, err := l.take(ctx, digest)
	return h, err
}

// take is [Leases.Take]; it reports too whether another replica held
// the Lease since this one (it existed, and its holder was not this
// replica). Every take, a retake's too, checks the digest here.
func (l *Leases) take(ctx context.Context, digest string) (*Held, bool, error) {
	if digest == "" || len(validation.IsValidLabelValue(digest)) > 0 {
		return nil, false, fmt.Errorf("sandbox: a handle digest must be a label value (1 to 63 letters, digits, '.', '_' or '-'), not %q", digest)
	}
	name := LeaseName(digest)
	lease, moved, err := l.acquire(ctx, name, digest)
	if errors.Is(err, errRaced) {
		lease, moved, err = l.acquire(ctx, name, digest)
	}
	if err != nil {
		return nil, false, err
	}
	return l.hold(ctx, lease), moved, nil
}

// Retake is [Leases.Take] for a handle whose Lease this replica held
// before (prev, released since): when nobody wrote the Lease since, it
// costs one write, naming the resourceVersion of the release. It reports
// whether another replica held the Lease since prev (or it was deleted
// since: the handle ended elsewhere): then this replica's channel to the
// handle's Pod is stale.
func (l *Leases) Retake(ctx context.Context, digest string, prev *Held) (*Held, bool, error) {
	last := prev.releasedAs()
	if last == nil || last.Name != LeaseName(digest) {
		return l.take(ctx, digest)
	}
	next := last.DeepCopy()
	l.fill(next, next.Spec.LeaseTransitions)
	out, err := l.leases.Update(ctx, next, metav1.UpdateOptions{})
	switch {
	case err == nil:
		return l.hold(ctx, out), false, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// Written or deleted since this replica's release (another
		// replica took it, or the handle ended there): judged again, and
		// this replica's channel is stale whatever the Lease shows now.
		h, _, terr := l.take(ctx, digest)
		return h, terr == nil, terr
	}
	return nil, false, l.writeError(last.Name, err)
}

// acquire reads the Lease name and writes this replica in as its
// holder when it is missing, free or expired; moved says that it
// existed and this replica was not its last holder.
func (l *Leases) acquire(ctx context.Context, name, digest string) (lease *coordinationv1.Lease, moved bool, err error) {
	cur, err := l.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		created, cerr := l.leases.Create(ctx, l.newLease(name, digest), metav1.CreateOptions{})
		return created, false, l.writeError(name, cerr)
	}
	if err != nil {
		return nil, false, fmt.Errorf("sandbox: reading Lease %s in namespace %s: %w%s", name, l.ns, err, leaseHint(err))
	}
	holder, until, fresh := leaseHeld(cur, time.Now(), l.duration)
	if fresh {
		return nil, false, &HeldError{Holder: holder, Until: until}
	}
	moved = holder != l.id
	next := cur.DeepCopy()
	next.Labels = leaseLabels(digest)
	transitions := int32(0)
	if next.Spec.LeaseTransitions != nil {
		transitions = *next.Spec.LeaseTransitions + 1
	}
	l.fill(next, &transitions)
	updated, err := l.leases.Update(ctx, next, metav1.UpdateOptions{})
	return updated, moved, l.writeError(name, err)
}

// writeError words a failed write of Lease name: [errRaced] when another
// replica wrote it first.
func (l *Leases) writeError(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fmt.Errorf("sandbox: Lease %s: %w: retry the call", name, errRaced)
	}
	return fmt.Errorf("sandbox: writing Lease %s in namespace %s: %w%s", name, l.ns, err, leaseHint(err))
}

// leaseHint says what to do about a refused request on Leases: the
// Role's rule for them.
func leaseHint(err error) string {
	if !apierrors.IsForbidden(err) {
		return ""
	}
	return " (the bridge's Role must grant create, get, update, delete and list on leases.coordination.k8s.io: see deploy/kubernetes/rbac.yaml)"
}

// newLease is the Lease of a handle that has none yet, held by this
// replica.
func (l *Leases) newLease(name, digest string) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.ns, Labels: leaseLabels(digest)}}
	zero := int32(0)
	l.fill(lease, &zero)
	return lease
}

// fill writes this replica into lease as a new holder.
func (l *Leases) fill(lease *coordinationv1.Lease, transitions *int32) {
	now := metav1.NowMicro()
	secs := int32(l.duration / time.Second)
	id := l.id
	lease.Spec.HolderIdentity = &id
	lease.Spec.LeaseDurationSeconds = &secs
	lease.Spec.AcquireTime = &now
	lease.Spec.RenewTime = &now
	lease.Spec.LeaseTransitions = transitions
}

// leaseLabels are the labels of a handle's Lease: codebridge's mark and
// the handle's digest, as its sandbox Pod carries them.
func leaseLabels(digest string) map[string]string {
	return map[string]string{engine.LabelKey: "1", engine.LabelHandle: digest}
}

// leaseHeld reports who holds lease and until when, and whether that is
// still ahead of now. A Lease without a holder, or without a time, is
// free; one without a duration gets def.
func leaseHeld(lease *coordinationv1.Lease, now time.Time, def time.Duration) (holder string, until time.Time, fresh bool) {
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" {
		return "", time.Time{}, false
	}
	last := s.RenewTime
	if last == nil {
		last = s.AcquireTime
	}
	if last == nil {
		return *s.HolderIdentity, time.Time{}, false
	}
	d := def
	if s.LeaseDurationSeconds != nil {
		d = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	until = last.Add(d)
	return *s.HolderIdentity, until, now.Before(until)
}

// Sweep removes the Leases of handles whose sandbox Pod is gone (or has
// ended), unless a replica holds them still: a replica may take a new
// handle's Lease before its Pod exists. It returns how many it removed.
func (l *Leases) Sweep(ctx context.Context) (int, error) {
	leases, err := l.leases.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelKey + "=1," + engine.LabelHandle})
	if err != nil {
		return 0, fmt.Errorf("sandbox: listing the handles' Leases in namespace %s: %w%s", l.ns, err, leaseHint(err))
	}
	alive, err := l.handlesAlive(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	now := time.Now()
	for i := range leases.Items {
		lease := &leases.Items[i]
		if _, _, fresh := leaseHeld(lease, now, l.duration); fresh || alive[lease.Labels[engine.LabelHandle]] {
			continue
		}
		rv := lease.ResourceVersion
		err := l.leases.Delete(ctx, lease.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		switch {
		case err == nil:
			removed++
			l.log.Info("removed the Lease of a handle whose sandbox Pod is gone", "lease", lease.Name)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err): // gone, or taken since the listing
		default:
			errs = append(errs, fmt.Errorf("sandbox: deleting Lease %s in namespace %s: %w", lease.Name, l.ns, err))
		}
	}
	return removed, errors.Join(errs...)
}

// Held is a handle's Lease while this replica holds it: it is renewed
// every renew period until Release, End, or its loss.
type Held struct {
	l    *Leases
	name string
	stop context.CancelFunc
	done chan struct{} // closed when the renewals have stopped
	lost chan struct{}
	once sync.Once

	mu       sync.Mutex
	lease    *coordinationv1.Lease // as this replica last wrote it
	released bool                  // Release wrote lease, with no holder
}

// releasedAs is the Lease as this replica's Release left it, or nil
// when h was not released (it was lost, ended, abandoned, or its
// release failed).
func (h *Held) releasedAs() *coordinationv1.Lease {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		return nil
	}
	return h.lease
}

// errLost says that a renewal found the Lease gone or held by another
// replica.
var errLost = errors.New("the Lease is gone or held by another replica")

// hold starts renewing lease, just taken.
func (l *Leases) hold(ctx context.Context, lease *coordinationv1.Lease) *Held {
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h := &Held{l: l, name: lease.Name, stop: stop, done: make(chan struct{}), lost: make(chan struct{}), lease: lease}
	go h.renewals(rctx)
	return h
}

// Name is the name of the held Lease.
func (h *Held) Name() string { return h.name }

// Lost is closed once this replica no longer holds the Lease: a renewal
// found another holder (or the Lease gone), renewals failed for so long
// that another replica may take it, or Release or End ran. The replica
// must stop using the handle's channel then.
func (h *Held) Lost() <-chan struct{} { return h.lost }

// renewals renews the Lease every renew period until ctx ends or the
// Lease is lost. A replica whose renewals fail gives the Lease up one
// renew period before another replica may take it (Duration after the
// last renewal), so that the two never use the channel at once.
func (h *Held) renewals(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(h.l.renew)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := h.renew(ctx)
		switch {
		case err == nil:
			last = time.Now()
		case ctx.Err() != nil:
			return
		case errors.Is(err, errLost):
			h.l.log.Warn("lost a session's Lease: another replica holds it now; this replica stops using its channel", "lease", h.name)
			h.gone()
			return
		case time.Since(last) >= h.l.duration-h.l.renew:
			h.l.log.Warn("gave up a session's Lease: it could not be renewed before another replica may take it", "lease", h.name, "err", err)
			h.gone()
			return
		default:
			h.l.log.Warn("renewing a session's Lease failed; retrying", "lease", h.name, "err", err)
		}
	}
}

// renew writes a new renewTime into the Lease, within one renew
// period. When another write came between (a conflict), it reads the
// Lease and renews it only if this replica holds it still.
func (h *Held) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.l.renew)
	defer cancel()
	h.mu.Lock()
	next := h.lease.DeepCopy()
	h.mu.Unlock()
	now := metav1.NowMicro()
	next.Spec.RenewTime = &now
	out, err := h.l.leases.Update(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		if next, err = h.reread(ctx); err != nil {
			return err
		}
		next.Spec.RenewTime = &now
		out, err = h.l.leases.Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.lease = out
	h.mu.Unlock()
	return nil
}

// reread reads the Lease after a conflict: [errLost] unless this replica
// holds it still.
func (h *Held) reread(ctx context.Context) (*coordinationv1.Lease, error) {
	got, err := h.l.leases.Get(ctx, h.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, errLost
	case err != nil:
		return nil, err
	case got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != h.l.id:
		return nil, errLost
	}
	return got, nil
}

// gone closes Lost, once.
func (h *Held) gone() { h.once.Do(func() { close(h.lost) }) }

// Release stops renewing the Lease and clears its holder, so that any
// replica may take it at once: the handle lives on, and its next call
// may come to another replica.
func (h *Held) Release(ctx context.Context) error { return h.finish(ctx, false) }

// End stops renewing the Lease and deletes it: the handle has ended.
func (h *Held) End(ctx context.Context) error { return h.finish(ctx, true) }

// Abandon stops renewing the Lease and leaves it as it is, held until
// it expires: what the death of this replica does. Another replica takes
// it only after renewTime + duration. Lost is closed.
func (h *Held) Abandon() {
	h.stop()
	<-h.done
	h.gone()
}

// finish stops the renewals and lets the Lease go (deletes it when
// end), unless it was lost already. A conflict means another write came
// since this replica's last: the Lease is read again and let go only if
// this replica holds it still.
func (h *Held) finish(ctx context.Context, end bool) error {
	h.stop()
	<-h.done
	select {
	case <-h.lost:
		return nil
	default:
	}
	defer h.gone()
	h.mu.Lock()
	cur := h.lease
	h.mu.Unlock()
	out, err := h.letGo(ctx, cur, end)
	if apierrors.IsConflict(err) {
		if cur, err = h.reread(ctx); err == nil {
			out, err = h.letGo(ctx, cur, end)
		}
	}
	if err == nil && !end {
		h.mu.Lock()
		h.lease, h.released = out, true
		h.mu.Unlock()
	}
	switch {
	case err == nil, errors.Is(err, errLost), apierrors.IsNotFound(err):
		return nil
	case end:
		return fmt.Errorf("sandbox: deleting Lease %s in namespace %s: %w (the sweep of Leases removes it once its Pod is gone)", h.name, h.l.ns, err)
	}
	return fmt.Errorf("sandbox: releasing Lease %s in namespace %s: %w (it expires %s after its last renewal)", h.name, h.l.ns, err, h.l.duration)
}

// letGo deletes lease (end) or clears its holder, on condition that it
// is still as this replica last saw it; it returns the Lease as written.
func (h *Held) letGo(ctx context.Context, lease *coordinationv1.Lease, end bool) (*coordinationv1.Lease, error) {
	if end {
		rv := lease.ResourceVersion
		return nil, h.l.leases.Delete(ctx, h.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	}
	next := lease.DeepCopy()
	next.Spec.HolderIdentity = nil
	return h.l.leases.Update(ctx, next, metav1.UpdateOptions{})
}

// Drop deletes the Lease of the handle whose digest is given, whoever
// holds it: the handle ended (its Pod is removed, so a holder's channel
// ends too). A Lease already gone is no error.
func (l *Leases) Drop(ctx context.Context, digest string) error {
	name := LeaseName(digest)
	err := l.leases.Delete(ctx, name, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("sandbox: deleting Lease %s in namespace %s: %w%s (the sweep of Leases removes it once its Pod is gone)", name, l.ns, err, leaseHint(err))
}

// handlesAlive is the set of handle digests that a sandbox Pod carries
// which is neither ended nor being deleted.
func (l *Leases) handlesAlive(ctx context.Context) (map[string]bool, error) {
	pods, err := l.pods.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelHandle})
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing the handles' Pods in namespace %s: %w", l.ns, err)
	}
	alive := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			alive[p.Labels[engine.LabelHandle]] = true
		}
	}
	return alive, nil
}

// restLeases is [leaseClient] over a coordination REST client, in one
// namespace.
type restLeases struct {
	c  rest.Interface
	ns string
}

func leaseParams() runtime.ParameterCodec {
	s, _ := leaseCodecs()
	return runtime.NewParameterCodec(s)
}

func (r restLeases) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := r.c.Post().Namespace(r.ns).Resource("leases").VersionedParams(&opts, leaseParams()).Body(lease).Do(ctx).Into(out)
	return out, err
}

func (r restLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := r.c.Get().Namespace(r.ns).Resource("leases").Name(name).VersionedParams(&opts, leaseParams()).Do(ctx).Into(out)
	return out, err
}

func (r restLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := r.c.Put().Namespace(r.ns).Resource("leases").Name(lease.Name).VersionedParams(&opts, leaseParams()).Body(lease).Do(ctx).Into(out)
	return out, err
}

func (r restLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.c.Delete().Namespace(r.ns).Resource("leases").Name(name).Body(&opts).Do(ctx).Error()
}

func (r restLeases) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	out := &coordinationv1.LeaseList{}
	err := r.c.Get().Namespace(r.ns).Resource("leases").VersionedParams(&opts, leaseParams()).Do(ctx).Into(out)
	return out, err
}
