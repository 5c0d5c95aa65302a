package core_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
)

// unseen is a client whose reads find nothing, as a cache that has not yet
// seen objects made a moment ago; its writes reach the API server.
type unseen struct{ client.Client }

func (unseen) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: obj.GetObjectKind().GroupVersionKind().Kind}, key.Name)
}

func (unseen) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// Someone else's namespace, and a RoleBinding of upstream's name in it, made
// a moment before a Profile of the same name gets its first pass, when the
// plugin's caches do not show them yet: with adopt on, the create-only apply
// finds the namespace and the Applier reads it from the API server. The
// owner rule must hold there as it does for a cached namespace: nothing of
// bob's is taken over, written or given an owner reference to alice's
// Profile (whose deletion would then delete it).
func TestForeignNamespaceUnseenByTheCacheIsNotAdopted(t *testing.T) {
	ctx := t.Context()
	name := "unseen-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{core.AnnotationOwner: "bob@example.org"}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: core.OwnerRoleBinding, Namespace: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob@example.org"}},
	}
	if err := env.Client.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}

	def := core.Definition()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "alice@example.org"}},
	}
	cfg, err := def.Decode([]byte(`{"adopt": true}`), p)
	if err != nil {
		t.Fatal(err)
	}
	c := unseen{env.Client}
	objects := apply.New(c, def.Kind(), p, def.Owns, append(apply.OptionsFor(def), apply.WithLiveReader(env.Client))...)
	res, err := def.Plugin.Apply(ctx, plugins.Request{Profile: p, Config: cfg, Client: c, Objects: objects})
	if err == nil || !strings.Contains(err.Error(), `belongs to "bob@example.org"`) {
		t.Errorf("Apply = %s, %v; want a conflict that names the namespace's owner", res.Summary(), err)
	}
	if got := res.Count(plugins.Configured) + res.Count(plugins.Created); got != 0 {
		t.Errorf("Apply wrote %d objects (%s); want none", got, res.Summary())
	}

	var gotNS corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &gotNS); err != nil {
		t.Fatal(err)
	}
	if gotNS.ResourceVersion != ns.ResourceVersion || len(gotNS.OwnerReferences) != 0 {
		t.Errorf("bob's namespace was written: resourceVersion %s -> %s, labels %v, owner references %v",
			ns.ResourceVersion, gotNS.ResourceVersion, gotNS.Labels, gotNS.OwnerReferences)
	}
	var gotRB rbacv1.RoleBinding
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rb), &gotRB); err != nil {
		t.Fatal(err)
	}
	if gotRB.ResourceVersion != rb.ResourceVersion {
		t.Errorf("bob's RoleBinding was written: resourceVersion %s -> %s, subjects %v", rb.ResourceVersion, gotRB.ResourceVersion, gotRB.Subjects)
	}
	var sas corev1.ServiceAccountList
	if err := env.Client.List(ctx, &sas, client.InNamespace(name), client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue}); err != nil {
		t.Fatal(err)
	}
	if len(sas.Items) != 0 {
		t.Errorf("%d of our ServiceAccounts were written into bob's namespace", len(sas.Items))
	}
}
