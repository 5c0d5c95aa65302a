package contributors_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/reconcilers"
)

// The hostile suite: a Profile's owner holds kubeflow-admin in the
// namespace, so it may change RoleBindings and AuthorizationPolicies
// there, and where self-serve is on it writes its own spec.plugins.

// namespaceAdminRules are the rights of kubeflow-admin that matter here: a
// tenant's usual rights, and RBAC and Istio's policies in its namespace.
var namespaceAdminRules = append(slices.Clone(testhost.TenantRules),
	rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"*"}},
	rbacv1.PolicyRule{APIGroups: []string{"security.istio.io"}, Resources: []string{"authorizationpolicies"}, Verbs: []string{"*"}},
)

// namespaceAdmin returns a client impersonating a user who holds exactly
// namespaceAdminRules in namespace, and makes the kubeflow ClusterRoles
// (envtest has none) with rules that user holds, so that RBAC lets it bind
// them, as Kubeflow lets an owner bind them in its namespace.
func namespaceAdmin(t *testing.T, namespace string) client.Client {
	t.Helper()
	for _, r := range []string{"kubeflow-admin", "kubeflow-edit", "kubeflow-view"} {
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: r}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
		if err := env.Client.Create(t.Context(), cr); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	user := "admin-" + namespace + "-" + rand.String(4)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user}, Rules: namespaceAdminRules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The tenant's hand edits of our binding and policy (a second subject, a
// second user in the rule) are put back within seconds; KFAM can list the
// binding again.
func TestTenantEditsArePutBack(t *testing.T) {
	start(t)
	name := uniqueName("edit")
	testhost.NewProfile(t, env.Client, name, nil, plugin(entry("User", "alice@example.org", "edit")))
	waitOwned(t, name, []string{aliceEdit}, []string{aliceEdit})
	tenant := namespaceAdmin(t, name)

	var rb rbacv1.RoleBinding
	if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: name, Name: aliceEdit}, &rb); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(rb.Subjects)
	rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "mallory@example.org"})
	if err := tenant.Update(t.Context(), &rb); err != nil {
		t.Fatalf("the tenant edits the binding: %v", err)
	}
	ap, err := getPolicy(t, name, aliceEdit)
	if err != nil {
		t.Fatal(err)
	}
	wantValues := slices.Clone(ap.Spec.Rules[0].When[0].Values)
	ap.Spec.Rules[0].When[0].Values = append(ap.Spec.Rules[0].When[0].Values, "mallory@example.org")
	if err := tenant.Update(t.Context(), ap); err != nil {
		t.Fatalf("the tenant edits the policy: %v", err)
	}

	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		bs, ps := owned(t, name)
		got, ok := bs[aliceEdit]
		gotAP, okAP := ps[aliceEdit]
		if !ok || !okAP {
			return false, "binding or policy gone"
		}
		d := cmp.Diff(want, got.Subjects) + cmp.Diff(wantValues, gotAP.Spec.Rules[0].When[0].Values)
		return d == "", "subjects and header values (-want +got):\n" + d
	})
	waitKFAMList(t, name, "User alice@example.org edit")
}

// A grant the tenant makes under our labels is not ours to keep: no entry
// wants it, so it is deleted within seconds.
func TestForgedOwnershipIsPruned(t *testing.T) {
	start(t)
	name := uniqueName("forge")
	testhost.NewProfile(t, env.Client, name, nil, plugin(entry("User", "alice@example.org", "edit")))
	waitOwned(t, name, []string{aliceEdit}, []string{aliceEdit})
	tenant := namespaceAdmin(t, name)
	forged := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: contributors.BindingName("User", "mallory@example.org", "admin"),
			Labels: plugins.OwnershipLabels(contributors.Kind, name), Annotations: map[string]string{"user": "mallory@example.org", "role": "admin"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "mallory@example.org"}},
	}
	if err := tenant.Create(t.Context(), forged); err != nil {
		t.Fatalf("the tenant creates a binding: %v", err)
	}
	waitOwned(t, name, []string{aliceEdit}, []string{aliceEdit})
	waitKFAMList(t, name, "User alice@example.org edit")
}

// A Profile that asks for more than the host allows, or for names the mesh
// would read as wildcards, gets only its valid entries; nothing in the
// namespace grants any refused subject.
func TestBeyondTheHostsLimits(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: contributors.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"groups": {"header": "kubeflow-groups"}, "userDomains": ["*@example.org"], "maxContributors": 10}`)),
		reconcilers.WithResync(10 * time.Minute),
	}})
	name := uniqueName("greedy")
	testhost.NewProfile(t, env.Client, name, nil, plugin(
		entry("User", "bob@example.org", "view"),
		entry("User", "*", "edit"),
		entry("User", "*@example.org", "edit"),
		entry("User", "bob*", "edit"),
		entry("Group", "*", "view"),
		entry("Group", "readers,admins", "view"),
		entry("ServiceAccount", "default-editor", "edit"),
		entry("User", "mallory@example.org", "admin"),
		entry("User", "eve@evil.org", "view"),
		entry("User", "namespaceAdmin", "edit"),
		entry("User", "eleventh@example.org", "view"),
	))
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "InvalidSpec")
	if !strings.HasSuffix(c.Message, "(and 5 more problems)") {
		t.Errorf("condition %q: want the first five of ten problems and a count of the rest", c.Message)
	}
	waitOwned(t, name, []string{bobView}, []string{bobView})

	var rbs rbacv1.RoleBindingList
	if err := env.Client.List(t.Context(), &rbs, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	for _, rb := range rbs.Items {
		for _, s := range rb.Subjects {
			if s.Name != "bob@example.org" {
				t.Errorf("RoleBinding %s grants %s %s", rb.Name, s.Kind, s.Name)
			}
		}
	}
	var aps securityv1.AuthorizationPolicyList
	if err := env.Client.List(t.Context(), &aps, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	if len(aps.Items) != 1 {
		t.Errorf("%d AuthorizationPolicies, want bob's alone", len(aps.Items))
	}
}

// Entries named after the upstream controller's objects get KFAM's names,
// which never are upstream's (TestNoUpstreamNameHasTheShape and
// FuzzBindingNameShape prove it for every name): upstream's objects stay
// untouched.
func TestNoEntryReachesUpstreamObjects(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: contributors.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"groups": {"header": "kubeflow-groups"}, "roles": ["admin", "edit", "view"]}`)),
		reconcilers.WithResync(10 * time.Minute),
	}})
	name := uniqueName("upstream")
	testhost.NewProfile(t, env.Client, name, nil)
	owner := rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "owner@example.org"}
	theirs := []client.Object{
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "namespaceAdmin", Annotations: map[string]string{"user": owner.Name, "role": "admin"}},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-admin"}, Subjects: []rbacv1.Subject{owner}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default-editor"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-edit"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: name, Name: "default-editor"}}},
		&securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "ns-owner-access-istio"}},
	}
	for _, o := range theirs {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	declare(t, name,
		entry("User", "namespaceAdmin", "admin"),
		entry("Group", "default-editor", "edit"),
		entry("User", "ns-owner-access-istio", "view"),
	)
	var want []string
	for _, e := range [][3]string{{"User", "namespaceAdmin", "admin"}, {"Group", "default-editor", "edit"}, {"User", "ns-owner-access-istio", "view"}} {
		want = append(want, contributors.BindingName(e[0], e[1], e[2]))
	}
	waitOwned(t, name, want, want)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "6 objects in sync")
	if got := fmt.Sprint(want); got != "[user-namespaceadmin-clusterrole-admin group-default-editor-clusterrole-edit user-ns-owner-access-istio-clusterrole-view]" {
		t.Errorf("names %s", got)
	}
	unchanged(t, theirs...)
	waitKFAMList(t, name, "Group default-editor edit", "User namespaceAdmin admin", "User ns-owner-access-istio view", "User owner@example.org admin")
}
