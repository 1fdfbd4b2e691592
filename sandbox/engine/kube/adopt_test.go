//go:build kubernetes

package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestKubeExecReachesOnlyItsOwnOrDetachablePods: the relay runs in a
// detachable sandbox Pod (any replica's) and in a Pod this bridge started
// (a stdio session's, to reach its fork); another bridge's stdio sandbox
// and a Pod that is no sandbox are refused before any exec.
func TestKubeExecReachesOnlyItsOwnOrDetachablePods(t *testing.T) {
	cs := fake.NewClientset()
	e := testKubeEngine(cs)
	e.owner.pod, e.owner.podUID = "me", "my-uid"
	running := func(name string, labels map[string]string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mine := e.owner.labels()
	mine[engine.LabelKey] = "1"
	other := e.owner.labels()
	other[engine.LabelKey], other[LabelPod], other[LabelPodUID] = "1", "another-bridge", "other-uid"
	running("mine", mine)
	running("others-stdio", other)
	notSandbox := e.owner.labels()
	delete(notSandbox, engine.LabelKey)
	running("not-a-sandbox", notSandbox)
	for _, name := range []string{"others-stdio", "not-a-sandbox"} {
		if _, err := e.Exec(context.Background(), name, []string{"true"}); err == nil || !strings.Contains(err.Error(), "cannot be adopted") {
			t.Errorf("Exec in %s: %v, want a refusal", name, err)
		}
	}
	if !ownedBy(mine, e.owner.labels()) || ownedBy(other, e.owner.labels()) || !detachable(withHandle(other)) {
		t.Error("ownedBy/detachable: this bridge's Pod must count as its own, another's not, a handle's as detachable")
	}
}
