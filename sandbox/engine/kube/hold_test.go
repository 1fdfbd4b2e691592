//go:build kubernetes

package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// leaseRequests counts the Lease requests of cs by verb.
func leaseRequests(cs *fake.Clientset) map[string]int {
	n := map[string]int{}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "leases" {
			n[a.GetVerb()]++
		}
	}
	return n
}

// TestRetakeAfterOwnReleaseIsOneWrite: a replica that takes again a Lease
// it released, which nobody wrote since, does so with one update and no
// read, and its channel is not stale.
func TestRetakeAfterOwnReleaseIsOneWrite(t *testing.T) {
	ctx := context.Background()
	cs := newVersioned()
	a := testLeases(t, cs, "a")
	h, moved, err := a.Retake(ctx, "d1", nil)
	if err != nil || moved {
		t.Fatalf("first take: moved %v, %v", moved, err)
	}
	if err = h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()
	h2, moved, err := a.Retake(ctx, "d1", h)
	if err != nil || moved {
		t.Fatalf("retake: moved %v, %v", moved, err)
	}
	defer func() { _ = h2.Release(ctx) }()
	if got := leaseRequests(cs); got["update"] != 1 || len(got) != 1 {
		t.Errorf("a retake with nothing changed made %v, want one update", got)
	}
}

// TestRetakeAfterAnotherHolderIsMoved: when another replica held the
// Lease between two holds of this one, the retake says so (this
// replica's channel is stale), even though the other released it.
func TestRetakeAfterAnotherHolderIsMoved(t *testing.T) {
	ctx := context.Background()
	cs := newVersioned()
	a, b := testLeases(t, cs, "a"), testLeases(t, cs, "b")
	h, _, err := a.Retake(ctx, "d1", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Release(ctx)
	hb, moved, err := b.Retake(ctx, "d1", nil)
	if err != nil || !moved {
		t.Fatalf("b's take of a Lease a held: moved %v, %v", moved, err)
	}
	_ = hb.Release(ctx)
	h2, moved, err := a.Retake(ctx, "d1", h)
	if err != nil || !moved {
		t.Fatalf("a's retake after b held it: moved %v, %v (want moved)", moved, err)
	}
	defer func() { _ = h2.Release(ctx) }()
}

// TestRetakeAfterDropIsMoved: when the Lease was deleted since this
// replica released it (the handle ended on another replica), the retake
// says the channel is stale, though it creates the Lease anew.
func TestRetakeAfterDropIsMoved(t *testing.T) {
	ctx := context.Background()
	cs := newVersioned()
	a, b := testLeases(t, cs, "a"), testLeases(t, cs, "b")
	h, _, err := a.Retake(ctx, "d1", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Release(ctx)
	if err = b.Drop(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	h2, moved, err := a.Retake(ctx, "d1", h)
	if err != nil || !moved {
		t.Fatalf("a's retake after the Lease was dropped: moved %v, %v (want moved)", moved, err)
	}
	defer func() { _ = h2.Release(ctx) }()
}

// TestHeldIsErrHeld: while another replica holds the Lease, a take fails
// with an error the bridge recognises as [engine.ErrHeld], to wait.
func TestHeldIsErrHeld(t *testing.T) {
	ctx := context.Background()
	cs := newVersioned()
	a, b := testLeases(t, cs, "a"), testLeases(t, cs, "b")
	h, _, err := a.Retake(ctx, "d1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(ctx) }()
	if _, _, err := b.Retake(ctx, "d1", nil); !errors.Is(err, engine.ErrHeld) {
		t.Fatalf("b took a Lease a holds: %v", err)
	}
}

// TestDropDeletesHeldLease: a handle that ends loses its Lease, whoever
// holds it, and dropping one already gone is no error.
func TestDropDeletesHeldLease(t *testing.T) {
	ctx := context.Background()
	cs := newVersioned()
	a := testLeases(t, cs, "a")
	if _, _, err := a.Retake(ctx, "d1", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Drop(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Drop(ctx, "d1"); err != nil {
		t.Fatalf("dropping a Lease already gone: %v", err)
	}
	if l, err := cs.CoordinationV1().Leases("ns").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("Leases left after Drop: %v, %v", l, err)
	}
}

// TestRetakeChecksTheDigest: a retake with no earlier hold checks the
// digest as a take does: one that is no label value (it would name
// another object, or none) is refused before anything is written.
func TestRetakeChecksTheDigest(t *testing.T) {
	a := testLeases(t, newVersioned(), "a")
	for _, bad := range []string{"", "../lease", strings.Repeat("a", 64), "a\x1b[31m"} {
		if h, _, err := a.Retake(context.Background(), bad, nil); err == nil {
			_ = h.Release(context.Background())
			t.Fatalf("retook a Lease for the digest %q", bad)
		}
	}
}
