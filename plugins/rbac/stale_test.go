package rbac_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/rbac"
)

// behind is a client whose reads of RoleBindings answer the one it holds,
// as a cache that has not caught up does; its writes reach the API server.
type behind struct {
	client.Client
	binding *rbacv1.RoleBinding
}

func (b behind) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	rb, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return b.Client.Get(ctx, key, obj, opts...)
	}
	if key.Namespace != b.binding.Namespace || key.Name != b.binding.Name {
		return apierrors.NewNotFound(rbacv1.Resource("rolebindings"), key.Name)
	}
	b.binding.DeepCopyInto(rb)
	return nil
}

func (b behind) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*rbacv1.RoleBindingList); ok {
		l.Items = []rbacv1.RoleBinding{*b.binding.DeepCopy()}
		return nil
	}
	return b.Client.List(ctx, list, opts...)
}

// A binding of ours whose role the host changes, which someone took over a
// moment before (relabelled) while the cache still shows it as ours: the
// pass that would delete and make it again with the new role must leave it.
func TestReboundBindingTakenOverUnseenByTheCacheIsLeft(t *testing.T) {
	ctx := t.Context()
	ns := "rebound-" + rand.String(5)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: types.UID("uid-" + ns)},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "alice@example.org"}}}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: ns, Labels: plugins.OwnershipLabels(rbac.Kind, p.Name)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "readers@example.org"}},
	}
	if err := env.Client.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	seen := rb.DeepCopy()
	taken := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"someone-else"}}}`))
	if err := env.Client.Patch(ctx, rb, taken); err != nil {
		t.Fatal(err)
	}

	def := rbac.Definition()
	cfg, err := def.Decode([]byte(`{"bindings":[{"name":"readers","roleRef":{"kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"Group","name":"readers@example.org"}]}]}`), p)
	if err != nil {
		t.Fatal(err)
	}
	c := behind{Client: env.Client, binding: seen}
	objects := apply.New(c, def.Kind(), p, def.Owns, append(apply.OptionsFor(def), apply.WithLiveReader(env.Client))...)
	res, err := def.Plugin.Apply(ctx, plugins.Request{Profile: p, Config: cfg, Client: c, Objects: objects})
	t.Logf("pass: %s, %v", res.Summary(), err)

	var got rbacv1.RoleBinding
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rb), &got); err != nil {
		t.Fatalf("the binding someone took over is gone: %v", err)
	}
	if got.UID != rb.UID || got.RoleRef.Name != "view" || got.Labels[plugins.LabelManagedBy] != "someone-else" {
		t.Errorf("the binding someone took over was replaced or written: uid %s (was %s), role %s, labels %v", got.UID, rb.UID, got.RoleRef.Name, got.Labels)
	}
}
