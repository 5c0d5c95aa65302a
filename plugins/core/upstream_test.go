package core_test

import (
	"testing"

	securityapi "istio.io/api/security/v1beta1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// upstreamManager is the field manager the upstream controller's writes carry.
const upstreamManager = "manager"

// createUpstreamShape creates what the upstream profile controller creates
// for p, the way it does: plain Creates, controller references to the
// Profile, upstream's annotations and labels, and none of ours. It returns
// the objects with their UIDs.
func createUpstreamShape(t *testing.T, p *kubeflowv1.Profile) []client.Object {
	t.Helper()
	ref := metav1.OwnerReference{
		APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile", Name: p.Name, UID: p.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	meta := func(name string, ann map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: p.Name, Annotations: ann, OwnerReferences: []metav1.OwnerReference{ref}}
	}
	admin := map[string]string{"user": p.Spec.Owner.Name, "role": "admin"}
	saBinding := func(name, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: meta(name, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: p.Name}},
		}
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:            p.Name,
			Annotations:     map[string]string{"owner": p.Spec.Owner.Name},
			Labels:          map[string]string{"istio-injection": "enabled", "app.kubernetes.io/part-of": "kubeflow-profile"},
			OwnerReferences: []metav1.OwnerReference{ref},
		}},
		&securityv1beta1.AuthorizationPolicy{
			ObjectMeta: meta("ns-owner-access-istio", admin),
			Spec: securityapi.AuthorizationPolicy{
				Action: securityapi.AuthorizationPolicy_ALLOW,
				Rules: []*securityapi.Rule{
					{
						When: []*securityapi.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{p.Spec.Owner.Name}}},
						From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{
							"cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
							"cluster.local/ns/kubeflow/sa/ml-pipeline-ui",
						}}}},
					},
					{When: []*securityapi.Condition{{Key: "source.namespace", Values: []string{p.Name}}}},
					{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/healthz", "/metrics", "/wait-for-drain"}}}}},
					{
						From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{"cluster.local/ns/kubeflow/sa/notebook-controller-service-account"}}}},
						To:   []*securityapi.Rule_To{{Operation: &securityapi.Operation{Methods: []string{"GET"}, Paths: []string{"*/api/kernels"}}}},
					},
				},
			},
		},
		&corev1.ServiceAccount{ObjectMeta: meta("default-editor", nil)},
		saBinding("default-editor", "kubeflow-edit"),
		&corev1.ServiceAccount{ObjectMeta: meta("default-viewer", nil)},
		saBinding("default-viewer", "kubeflow-view"),
		&rbacv1.RoleBinding{
			ObjectMeta: meta("namespaceAdmin", admin),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-admin"},
			Subjects:   []rbacv1.Subject{p.Spec.Owner},
		},
	}
	if len(p.Spec.ResourceQuotaSpec.Hard) > 0 {
		objs = append(objs, &corev1.ResourceQuota{ObjectMeta: meta("kf-resource-quota", nil), Spec: p.Spec.ResourceQuotaSpec})
	}
	for _, o := range objs {
		if err := env.Client.Create(t.Context(), o, client.FieldOwner(upstreamManager)); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	return objs
}

// gvkOf returns the kind of a typed object from the test scheme: a typed
// object's TypeMeta may be empty after a request.
func gvkOf(t *testing.T, o client.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := apiutil.GVKForObject(o, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return gvk
}
