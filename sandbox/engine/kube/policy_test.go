//go:build kubernetes

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// shippedPolicy is deploy/kubernetes/networkpolicy.yaml, as the API
// server would list it.
func shippedPolicy(t *testing.T) netPolicy {
	t.Helper()
	b, err := os.ReadFile("../../../deploy/kubernetes/networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var p netPolicy
	if err := json.Unmarshal(j, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func policy(t *testing.T, doc string) netPolicy {
	t.Helper()
	var p netPolicy
	if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubeNetworkPolicyVerdict: the sandbox Pods count as closed only
// when the policies that select them isolate both directions and none
// allows anything: policies add up, so one that allows egress opens
// what another denies.
func TestKubeNetworkPolicyVerdict(t *testing.T) {
	pods := map[string]string{engine.LabelKey: "1", engine.LabelHost: "h", engine.LabelPID: "7"}
	shipped := shippedPolicy(t)
	all := policy(t, "metadata: {name: all}\nspec: {podSelector: {}, policyTypes: [Ingress, Egress]}")
	others := policy(t, "metadata: {name: others}\nspec: {podSelector: {matchLabels: {app: web}}, policyTypes: [Ingress, Egress]}")
	dns := policy(t, "metadata: {name: dns}\nspec: {podSelector: {matchLabels: {io.codebridge: '1'}}, policyTypes: [Egress], egress: [{ports: [{port: 53, protocol: UDP}]}]}")
	ingressOnly := policy(t, "metadata: {name: in}\nspec: {podSelector: {matchExpressions: [{key: io.codebridge, operator: Exists}]}, policyTypes: [Ingress]}")
	cases := []struct {
		name     string
		policies []netPolicy
		closed   bool
		why      string
	}{
		{"the shipped policy", []netPolicy{shipped}, true, ""},
		{"an empty selector", []netPolicy{all}, true, ""},
		{"none", nil, false, "no NetworkPolicy selects"},
		{"another app's", []netPolicy{others}, false, "no NetworkPolicy selects"},
		{"deny-all and an allow", []netPolicy{shipped, dns}, false, "NetworkPolicy dns allows them some traffic"},
		{"ingress only", []netPolicy{ingressOnly}, false, "do not isolate both ingress and egress"},
		{"ingress and egress in two", []netPolicy{ingressOnly, policy(t, "metadata: {name: out}\nspec: {podSelector: {}, policyTypes: [Egress]}")}, true, ""},
	}
	for _, c := range cases {
		closed, why, _ := policyVerdict(c.policies, pods)
		if closed != c.closed || !strings.Contains(why, c.why) {
			t.Errorf("%s: closed %v (%s), want %v (%s)", c.name, closed, why, c.closed, c.why)
		}
	}
}

// TestKubeNetworkPolicyCheck: against an API server's list, the engine
// refuses a namespace without a closing policy, naming the namespace,
// the manifest and the opt-out; it accepts one with the shipped policy;
// with the opt-out it does not ask, and doctor is told.
func TestKubeNetworkPolicyCheck(t *testing.T) {
	var items []netPolicy
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/networking.k8s.io/v1/namespaces/team/networkpolicies" {
			http.NotFound(w, r)
			return
		}
		asked++
		b, _ := json.Marshal(map[string]any{"kind": "NetworkPolicyList", "items": items})
		fmt.Fprint(w, string(b))
	}))
	defer srv.Close()
	rc, err := coreClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := testKubeEngine(fake.NewClientset())
	e.ns = "team"
	err = e.checkNetworkPolicy(context.Background(), rc, false)
	for _, want := range []string{"no NetworkPolicy selects the sandbox Pods in namespace team", "kubectl -n team apply -f deploy/kubernetes/networkpolicy.yaml", "--allow-no-network-policy"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no policy: %v, want %q", err, want)
		}
	}
	holds(t, "doctor's network line fails", !findCheck(e, "network").OK)

	items = []netPolicy{shippedPolicy(t)}
	if err := e.checkNetworkPolicy(context.Background(), rc, false); err != nil {
		t.Errorf("with the shipped policy: %v", err)
	}
	holds(t, "doctor's network line names the policy", findCheck(e, "network").OK && strings.Contains(findCheck(e, "network").Detail, "codebridge-sandboxes-deny-all"))

	items, asked = nil, 0
	if err := e.checkNetworkPolicy(context.Background(), rc, true); err != nil || asked != 0 {
		t.Errorf("with --allow-no-network-policy: %v, %d lists", err, asked)
	}
	n := findCheck(e, "network")
	holds(t, "doctor warns of the opt-out", n.OK && n.Warn && strings.Contains(n.Detail, "--allow-no-network-policy"))
}
