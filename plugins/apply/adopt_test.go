package apply_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Adoption takes each object the upstream controller made with one
// request: the namespace, judged on the copy a watch shows, by an apply at
// the version judged; an object in it by an apply the API server refuses
// when another writer holds a field with another value. A foreign object
// (labelled by another tool, also one whose managed fields were wiped) is
// never taken, and a namespace the caller's rule refuses is not written.
func TestAdoptionSendsOneRequestPerObject(t *testing.T) {
	const ns = "adopted"
	e := startCachedServer(t, ns, &corev1.Namespace{}, &corev1.ServiceAccount{}, &rbacv1.RoleBinding{})
	ctx := t.Context()
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "p1"}}
	owns := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Namespace"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	}
	// What the upstream controller makes: no labels, its own manager.
	upstream := client.FieldOwner("manager")
	create := func(o client.Object) client.Object {
		t.Helper()
		if err := e.env.Client.Create(ctx, o, upstream); err != nil {
			t.Fatal(err)
		}
		return o
	}
	var nsObj corev1.Namespace
	if err := e.env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(nsObj.DeepCopy())
	nsObj.Annotations = map[string]string{"owner": "alice@example.org"}
	if err := e.env.Client.Patch(ctx, &nsObj, patch, upstream); err != nil {
		t.Fatal(err)
	}
	binding := func(name, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
	}
	before := []client.Object{
		create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-editor", Namespace: ns}}),
		create(binding("default-editor", "kubeflow-edit")),
		// Upstream's, with another value than ours: taken all the same,
		// after a read.
		create(func() *rbacv1.RoleBinding {
			b := binding("default-viewer", "kubeflow-view")
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns})
			return b
		}()),
	}
	helm := create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-viewer", Namespace: ns, Labels: map[string]string{plugins.LabelManagedBy: "Helm"}}})
	wiped := create(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "namespaceAdmin", Namespace: ns, Labels: map[string]string{plugins.LabelManagedBy: "someone"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.org"}},
	})
	// Managed fields wiped: the API server counts every field as another
	// writer's at the first apply.
	if err := e.env.Client.Patch(ctx, wiped, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`))); err != nil {
		t.Fatal(err)
	}

	var judged []string
	may := func(live client.Object) error {
		judged = append(judged, live.GetObjectKind().GroupVersionKind().Kind+" "+live.GetName())
		if live.GetObjectKind().GroupVersionKind().Kind == "Namespace" && live.GetAnnotations()["owner"] != "alice@example.org" {
			return plugins.Terminalf(plugins.ReasonConflict, "not alice's")
		}
		return nil
	}
	desired := func(owner string) []runtime.ApplyConfiguration {
		bindingAC := func(name, role string) *rbacv1ac.RoleBindingApplyConfiguration {
			return rbacv1ac.RoleBinding(name, ns).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role)).
				WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(ns))
		}
		return []runtime.ApplyConfiguration{
			corev1ac.Namespace(ns).WithAnnotations(map[string]string{"owner": owner}),
			corev1ac.ServiceAccount("default-editor", ns),
			bindingAC("default-editor", "kubeflow-edit"),
			corev1ac.ServiceAccount("default-viewer", ns),
			bindingAC("default-viewer", "kubeflow-view"),
			rbacv1ac.RoleBinding("namespaceAdmin", ns).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("kubeflow-admin")).
				WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.UserKind).WithAPIGroup(rbacv1.GroupName).WithName(owner)),
		}
	}
	// The host's uncached reader, counted.
	live, err := client.New(e.counter.Counting(e.env.Config), client.Options{Scheme: e.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	adopting := func() plugins.Objects {
		a := apply.New(e.client, "core", p, owns, apply.WithScheme(e.env.Scheme), apply.WithLiveReader(live), apply.WithUpstreamObjects())
		// The test's client stands in for the host's watch of namespaces;
		// its requests are not counted.
		return a.Adopting(may, e.env.Client)
	}

	e.counter.Reset()
	res, err := adopting().Apply(ctx, desired("alice@example.org")...)
	sent := e.counter.Mutating()
	t.Logf("Apply = %s; %s, applies %v", res.Summary(), e.counter, sent)
	for _, o := range []client.Object{helm, wiped} {
		if err == nil || !strings.Contains(err.Error(), o.GetName()) || plugins.ReasonOf(err, "") != plugins.ReasonConflict {
			t.Errorf("Apply error %v, want a Conflict naming %s", err, o.GetName())
		}
	}
	// The namespace, default-editor and its binding: one apply each.
	// default-viewer's binding, upstream's with other subjects: the apply
	// the API server refuses, a read, the adopting apply. The two foreign
	// objects: the refused apply and a read each.
	if got, want := len(sent), 3+2+2; got != want {
		t.Errorf("applies = %d %v, want %d", got, sent, want)
	}
	reads := map[string]int{}
	for _, path := range []string{
		"/api/v1/namespaces/" + ns,
		"/api/v1/namespaces/" + ns + "/serviceaccounts/default-editor",
		"/api/v1/namespaces/" + ns + "/serviceaccounts/default-viewer",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings/default-editor",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings/default-viewer",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings/namespaceAdmin",
	} {
		if n := e.counter.Count("GET", path); n > 0 {
			reads[path[strings.LastIndex(path, "/")+1:]] += n
		}
	}
	if want := map[string]int{"default-viewer": 2, "namespaceAdmin": 1}; !maps.Equal(reads, want) {
		t.Errorf("reads %v, want %v: one of each object the API server refused (default-viewer: the ServiceAccount and the RoleBinding)", reads, want)
	}
	slices.Sort(judged)
	if want := []string{"Namespace " + ns, "RoleBinding default-viewer"}; !slices.Equal(judged, want) {
		t.Errorf("the caller's rule judged %v, want %v: the namespace on the watched copy, and the one object read", judged, want)
	}
	for _, o := range append(before, &nsObj) {
		u := &metav1.PartialObjectMetadata{}
		u.SetGroupVersionKind(mustGVK(t, e, o))
		if err := e.env.Client.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
			t.Fatal(err)
		}
		if u.UID != o.GetUID() || !plugins.IsOwnedBy(u.Labels, "core", ns) {
			t.Errorf("%s %s: UID %s (was %s), labels %v; want taken in place", u.Kind, u.Name, u.UID, o.GetUID(), u.Labels)
		}
	}
	for _, o := range []client.Object{helm, wiped} {
		u := &metav1.PartialObjectMetadata{}
		u.SetGroupVersionKind(mustGVK(t, e, o))
		if err := e.env.Client.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
			t.Fatal(err)
		}
		var errs []error
		for _, f := range u.ManagedFields {
			if f.Manager == plugins.FieldManagerFor("core") {
				errs = append(errs, fmt.Errorf("our manager wrote %s", f.FieldsV1.Raw))
			}
		}
		if u.Labels[plugins.LabelManagedBy] == plugins.ManagedByValue {
			errs = append(errs, fmt.Errorf("labels %v", u.Labels))
		}
		if err := errors.Join(errs...); err != nil {
			t.Errorf("foreign %s %s was written: %v", u.Kind, u.Name, err)
		}
	}

	t.Run("a namespace the caller's rule refuses is not written", func(t *testing.T) {
		other := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "bobs", UID: "p2"}}
		bobs := create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bobs", Annotations: map[string]string{"owner": "bob@example.org"}}})
		judged = nil
		e.counter.Reset()
		a := apply.New(e.client, "core", other, owns, apply.WithScheme(e.env.Scheme), apply.WithLiveReader(live), apply.WithUpstreamObjects())
		_, err := a.Adopting(may, e.env.Client).Apply(ctx, corev1ac.Namespace("bobs").WithAnnotations(map[string]string{"owner": "alice@example.org"}))
		if plugins.ReasonOf(err, "") != plugins.ReasonConflict || !strings.Contains(err.Error(), "not alice's") {
			t.Errorf("Apply error %v, want the caller's Conflict", err)
		}
		if got := e.counter.Mutating(); len(got) != 0 {
			t.Errorf("writes = %v, want none", got)
		}
		var now corev1.Namespace
		if err := e.env.Client.Get(ctx, client.ObjectKeyFromObject(bobs), &now); err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != bobs.GetResourceVersion() {
			t.Errorf("bob's namespace was written: %v", now.ObjectMeta)
		}
	})
}

// mustGVK returns the kind of o as the test's scheme knows it.
func mustGVK(t *testing.T, e *cachedServer, o client.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := e.env.Client.GroupVersionKindFor(o)
	if err != nil {
		t.Fatal(err)
	}
	return gvk
}
