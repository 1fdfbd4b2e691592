//go:build kubernetes

package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/codebridge/codebridge/sandbox/engine"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// fatalWaiting are the reasons a container waits for that do not pass by
// themselves: the kubelet retries them with a back-off, but a sandbox is
// wanted now, so the start fails at once and says why.
var fatalWaiting = []string{
	"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "RegistryUnavailable",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError",
	"CrashLoopBackOff",
}

// podStarted reads a Pod's status: done with no reason when the sandbox
// container runs; done with the reason when it never will (an image that
// is missing, no node that fits, a container that could not be made or
// already ended); not done while it is on its way.
func podStarted(p *corev1.Pod) (done bool, why string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true, "no node can take it (" + c.Message + ")"
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != sandboxContainer {
			continue
		}
		switch st := s.State; {
		case st.Running != nil:
			return true, ""
		case st.Terminated != nil:
			return true, fmt.Sprintf("its container ended before the bridge could start the runtime in it (%s, exit code %d: %s)",
				st.Terminated.Reason, st.Terminated.ExitCode, st.Terminated.Message)
		case st.Waiting != nil && slices.Contains(fatalWaiting, st.Waiting.Reason):
			return true, st.Waiting.Reason + ": " + st.Waiting.Message
		}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return true, fmt.Sprintf("it ended (%s): %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	return false, ""
}

// waitRunning watches the new Pod until its container runs, and fails as
// soon as the Pod shows it never will, with the Pod's own events in the
// message. There is no timeout of its own: ctx (the session's start
// timeout) bounds it.
func (e *kubeEngine) waitRunning(ctx context.Context, p *corev1.Pod) error {
	name, rv := p.Name, p.ResourceVersion
	for {
		if done, why := podStarted(p); done {
			if why == "" {
				return nil
			}
			return e.cannotStart(ctx, p, why)
		}
		w, err := e.pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: rv,
		})
		if err != nil {
			return fmt.Errorf("sandbox: watching Pod %s on %s: %w", name, e.name, err)
		}
		next, err := e.nextPodEvent(ctx, w, p)
		w.Stop()
		if err != nil {
			return err
		}
		p, rv = next, next.ResourceVersion
	}
}

// nextPodEvent waits on w until the Pod changes in a way podStarted can
// decide on, or the watch ends (then it returns the Pod as it was, for
// the caller to watch again).
func (e *kubeEngine) nextPodEvent(ctx context.Context, w watch.Interface, p *corev1.Pod) (*corev1.Pod, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, e.cannotStart(context.WithoutCancel(ctx), p,
				"it was not running when the start timed out ("+ctx.Err().Error()+"); phase "+string(p.Status.Phase))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return p, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, e.cannotStart(ctx, p, "it was deleted while starting")
			case watch.Error:
				return nil, fmt.Errorf("sandbox: watching Pod %s on %s: %v", p.Name, e.name, ev.Object)
			}
			if np, ok := ev.Object.(*corev1.Pod); ok {
				p = np
				if done, _ := podStarted(p); done {
					return p, nil
				}
			}
		}
	}
}

// cannotStart is the error of a Pod that will not start: why, and the
// Pod's own events (the scheduler's and the kubelet's words).
func (e *kubeEngine) cannotStart(ctx context.Context, p *corev1.Pod, why string) error {
	msg := fmt.Sprintf("sandbox: the sandbox Pod %s on %s cannot start: %s", p.Name, e.name, why)
	if ev := e.podEvents(ctx, p); ev != "" {
		msg += "; its events: " + ev
	}
	if claim := claimOf(p); claim != "" {
		if ev := eventText(e.objectEvents(ctx, claim, "")); ev != "" {
			msg += "; its workspace claim " + claim + "'s events: " + ev
		}
	}
	if strings.Contains(why, "ErrImageNeverPull") || strings.Contains(why, "ImagePull") {
		msg += fmt.Sprintf("; put image %s on the cluster's nodes (a localhost/ image is never pulled: import it into each node's "+
			"container runtime), or set CODEBRIDGE_IMAGE to one they can pull", podImage(p))
	}
	return fmt.Errorf("%s", msg)
}

func podImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == sandboxContainer {
			return c.Image
		}
	}
	return ""
}

// podEvents lists the Pod's events, as [eventText] words them.
func (e *kubeEngine) podEvents(ctx context.Context, p *corev1.Pod) string {
	return eventText(e.objectEvents(ctx, p.Name, p.UID))
}

// objectEvents are the events of the object of this name (and UID, when
// both know it) in the engine's namespace; none when they cannot be
// read.
func (e *kubeEngine) objectEvents(ctx context.Context, name string, uid types.UID) []corev1.Event {
	list, err := e.events.List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		return nil
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name != name || (uid != "" && ev.InvolvedObject.UID != "" && ev.InvolvedObject.UID != uid) {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// eventText words events as "Reason: message", warnings first, each
// once, at most eight; "" when there are none.
func eventText(events []corev1.Event) string {
	var warnings, others []string
	for _, ev := range events {
		line := ev.Reason + ": " + engine.ClipText(ev.Message, 500)
		if ev.Type == corev1.EventTypeWarning {
			warnings = append(warnings, line)
		} else {
			others = append(others, line)
		}
	}
	lines := slices.Compact(append(warnings, others...))
	if len(lines) > 8 {
		lines = lines[:8]
	}
	return strings.Join(lines, "; ")
}
