//go:build kubernetes

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The Kubernetes engine talks to the API server through client-go's REST
// client with a scheme of its own that knows only the core group. The
// generated clientset (k8s.io/client-go/kubernetes, and its typed
// packages, which import kubernetes/scheme) registers every API group of
// Kubernetes when the program starts: every bridge would pay for it,
// whichever engine it uses. Here nothing is registered until a bridge
// connects to a cluster.

// podClient is what the engine does with Pods. Its methods are those of
// client-go's typed PodInterface, so tests can give the fake clientset's.
type podClient interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// claimClient is what the engine does with PersistentVolumeClaims (the
// persistent workspaces), as client-go's typed interface does.
type claimClient interface {
	Create(ctx context.Context, pvc *corev1.PersistentVolumeClaim, opts metav1.CreateOptions) (*corev1.PersistentVolumeClaim, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeClaimList, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// eventClient lists Events, as client-go's typed EventInterface does.
type eventClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error)
}

// kubeCodecs is the scheme of the core group (Pods, Events and the
// options of list, watch and exec), made on first use.
var kubeCodecs = sync.OnceValues(func() (*runtime.Scheme, serializer.CodecFactory) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err) // static registration: cannot fail
	}
	return s, serializer.NewCodecFactory(s)
})

// coreClient is a REST client of the core API group (/api/v1).
func coreClient(cfg *rest.Config) (*rest.RESTClient, error) {
	_, codecs := kubeCodecs()
	return groupClient(cfg, corev1.SchemeGroupVersion, "/api", codecs)
}

// groupClient is a REST client of one API group version, under apiPath
// ("/api" for the core group, "/apis" for the others), that decodes with
// codecs.
func groupClient(cfg *rest.Config, gv schema.GroupVersion, apiPath string, codecs serializer.CodecFactory) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "codebridge"
	}
	return rest.RESTClientFor(c)
}

// restPods is [podClient] over a core REST client, in one namespace.
type restPods struct {
	c  rest.Interface
	ns string
}

func params() runtime.ParameterCodec {
	s, _ := kubeCodecs()
	return runtime.NewParameterCodec(s)
}

func (p restPods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.c.Post().Namespace(p.ns).Resource("pods").VersionedParams(&opts, params()).Body(pod).Do(ctx).Into(out)
	return out, err
}

func (p restPods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.c.Get().Namespace(p.ns).Resource("pods").Name(name).VersionedParams(&opts, params()).Do(ctx).Into(out)
	return out, err
}

func (p restPods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := p.c.Get().Namespace(p.ns).Resource("pods").VersionedParams(&opts, params()).Do(ctx).Into(out)
	return out, err
}

func (p restPods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return p.c.Get().Namespace(p.ns).Resource("pods").VersionedParams(&opts, params()).Watch(ctx)
}

func (p restPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return p.c.Delete().Namespace(p.ns).Resource("pods").Name(name).Body(&opts).Do(ctx).Error()
}

// execURL is the address of a Pod's exec subresource.
func (p restPods) execURL(name string, opts *corev1.PodExecOptions) *url.URL {
	return p.c.Post().Namespace(p.ns).Resource("pods").Name(name).SubResource("exec").VersionedParams(opts, params()).URL()
}

// restClaims is [claimClient] over a core REST client, in one namespace.
type restClaims struct {
	c  rest.Interface
	ns string
}

const claims = "persistentvolumeclaims"

func (r restClaims) Create(ctx context.Context, pvc *corev1.PersistentVolumeClaim, opts metav1.CreateOptions) (*corev1.PersistentVolumeClaim, error) {
	out := &corev1.PersistentVolumeClaim{}
	err := r.c.Post().Namespace(r.ns).Resource(claims).VersionedParams(&opts, params()).Body(pvc).Do(ctx).Into(out)
	return out, err
}

func (r restClaims) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error) {
	out := &corev1.PersistentVolumeClaim{}
	err := r.c.Get().Namespace(r.ns).Resource(claims).Name(name).VersionedParams(&opts, params()).Do(ctx).Into(out)
	return out, err
}

func (r restClaims) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeClaimList, error) {
	out := &corev1.PersistentVolumeClaimList{}
	err := r.c.Get().Namespace(r.ns).Resource(claims).VersionedParams(&opts, params()).Do(ctx).Into(out)
	return out, err
}

func (r restClaims) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.c.Delete().Namespace(r.ns).Resource(claims).Name(name).Body(&opts).Do(ctx).Error()
}

// restEvents is [eventClient] over a core REST client, in one namespace.
type restEvents struct {
	c  rest.Interface
	ns string
}

func (e restEvents) List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	out := &corev1.EventList{}
	err := e.c.Get().Namespace(e.ns).Resource("events").VersionedParams(&opts, params()).Do(ctx).Into(out)
	return out, err
}

// accessReview asks the API server whether this client may do verb on
// resource (with subresource; of another API group than the core one
// after a '.', as kubectl names it) in namespace ns: a
// SelfSubjectAccessReview, sent as JSON so that the authorization group
// needs no scheme.
func accessReview(ctx context.Context, c rest.Interface, ns, verb, resource, sub string) (bool, error) {
	resource, group, _ := strings.Cut(resource, ".") // "networkpolicies.networking.k8s.io"
	body, err := json.Marshal(map[string]any{
		"apiVersion": "authorization.k8s.io/v1",
		"kind":       "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]string{
			"namespace": ns, "verb": verb, "group": group, "resource": resource, "subresource": sub,
		}},
	})
	if err != nil {
		return false, err
	}
	raw, err := c.Post().AbsPath("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").
		SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx)
	if err != nil {
		return false, err
	}
	var review struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &review); err != nil {
		return false, fmt.Errorf("reading the access review: %w", err)
	}
	return review.Status.Allowed, nil
}
