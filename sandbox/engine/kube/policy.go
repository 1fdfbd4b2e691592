//go:build kubernetes

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/codebridge/codebridge/sandbox/engine"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
)

// A sandbox Pod has the Pod network's interface: what closes it is a
// NetworkPolicy that selects the sandbox Pods and allows nothing in or
// out (deploy/kubernetes/networkpolicy.yaml). The engine does not make
// one (that would take a verb that can open other Pods' network too): it
// checks, when it connects, that one is there, and refuses to start
// sandboxes without it unless told to (--allow-no-network-policy: a
// cluster-wide policy the namespace cannot show, say). Whether the
// network plugin enforces policies cannot be seen from the API: that
// part is the cluster's.

// kubePolicyNeed is the permission the check needs.
var kubePolicyNeed = kubeNeed{"list", "networkpolicies.networking.k8s.io"}

// netPolicy is what the check reads of a NetworkPolicy.
type netPolicy struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		PodSelector metav1.LabelSelector `json:"podSelector"`
		PolicyTypes []string             `json:"policyTypes"`
		Ingress     []json.RawMessage    `json:"ingress"`
		Egress      []json.RawMessage    `json:"egress"`
	} `json:"spec"`
}

// types are the directions the policy isolates: those named, or, when
// none are (an object stored before the API server defaulted them),
// Ingress, and Egress when it has egress rules.
func (p netPolicy) types() (ingress, egress bool) {
	if len(p.Spec.PolicyTypes) == 0 {
		return true, len(p.Spec.Egress) > 0
	}
	return slices.Contains(p.Spec.PolicyTypes, "Ingress"), slices.Contains(p.Spec.PolicyTypes, "Egress")
}

// policyVerdict says whether the policies deny Pods with these labels
// all ingress and all egress: policies add up, so the Pods are closed
// when the policies that select them isolate both directions and none
// of them allows anything (has a rule) in a direction it isolates. why
// says what is missing; found names the policies that select the Pods.
func policyVerdict(policies []netPolicy, podLabels map[string]string) (closed bool, why string, found []string) {
	var in, out bool
	var opens []string
	for _, p := range policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(podLabels)) {
			continue
		}
		found = append(found, p.Metadata.Name)
		pin, pout := p.types()
		in, out = in || pin, out || pout
		if pin && len(p.Spec.Ingress) > 0 || pout && len(p.Spec.Egress) > 0 {
			opens = append(opens, p.Metadata.Name)
		}
	}
	switch {
	case len(found) == 0:
		return false, "no NetworkPolicy selects the sandbox Pods", nil
	case len(opens) > 0:
		return false, "NetworkPolicy " + strings.Join(opens, ", ") + " allows them some traffic", found
	case !in || !out:
		return false, "the NetworkPolicies that select them (" + strings.Join(found, ", ") + ") do not isolate both ingress and egress", found
	}
	return true, "", found
}

// checkNetworkPolicy lists the namespace's NetworkPolicies and judges
// them for this bridge's sandbox Pods; it records the finding for
// doctor, and fails unless the Pods are closed or allow says to go on.
func (e *kubeEngine) checkNetworkPolicy(ctx context.Context, rc rest.Interface, allow bool) error {
	ch := engine.Check{Name: "network", OK: true}
	defer func() { e.findings.mu.Lock(); e.findings.policy = ch; e.findings.mu.Unlock() }()
	if allow {
		ch.Warn = true
		ch.Detail = "not checked: --allow-no-network-policy starts sandbox Pods whether or not a NetworkPolicy closes their network"
		ch.Fix = "apply deploy/kubernetes/networkpolicy.yaml in namespace " + e.ns + " and drop --allow-no-network-policy"
		return nil
	}
	raw, err := rc.Get().AbsPath("/apis/networking.k8s.io/v1/namespaces", e.ns, "networkpolicies").DoRaw(ctx)
	var list struct {
		Items []netPolicy `json:"items"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &list)
	}
	if err != nil {
		ch.OK, ch.Detail = false, "the namespace's NetworkPolicies cannot be read: "+err.Error()
		return fmt.Errorf("sandbox: %s: listing the NetworkPolicies of namespace %s: %w", e.name, e.ns, err)
	}
	closed, why, found := policyVerdict(list.Items, e.owner.labels())
	if closed {
		ch.Detail = fmt.Sprintf("NetworkPolicy %s denies the sandbox Pods all ingress and egress (enforced only by a network plugin that implements policies)",
			strings.Join(found, ", "))
		return nil
	}
	ch.OK = false
	ch.Detail = why + " in namespace " + e.ns
	ch.Fix = "kubectl -n " + e.ns + " apply -f deploy/kubernetes/networkpolicy.yaml; or pass --allow-no-network-policy " +
		"when something the namespace cannot show closes the sandbox Pods' network (a cluster-wide policy)"
	return fmt.Errorf("sandbox: %s: %s (labelled %s=1), so they would have the Pod network: %s", e.name, ch.Detail, engine.LabelKey, ch.Fix)
}
