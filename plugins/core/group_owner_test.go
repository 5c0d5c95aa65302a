package core_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/istioauthz"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
)

// ensureAdminRole makes ClusterRole kubeflow-admin, which Kubeflow's
// manifests ship and envtest lacks, with the tenant rights of
// testhost.TenantRules; it is left for the package's other tests.
func ensureAdminRole(t *testing.T) {
	t.Helper()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: core.ClusterRoleAdmin}, Rules: testhost.TenantRules}
	if err := env.Client.Create(t.Context(), cr); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// can asks the API server's authorizer whether user, a member of groups,
// may do verb on resource in namespace.
func can(t *testing.T, user string, groups []string, verb, resource, namespace string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             append([]string{"system:authenticated"}, groups...),
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: resource},
	}}
	if err := env.Client.Create(t.Context(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

func groupOwned(name string) func(*kubeflowv1.Profile) {
	return func(p *kubeflowv1.Profile) {
		p.Spec.Owner = rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
}

// livePolicy returns the spec of ns-owner-access-istio as the API server
// holds it.
func livePolicy(t *testing.T, ns string) *securityv1beta1.AuthorizationPolicy {
	t.Helper()
	var ap securityv1.AuthorizationPolicy
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: core.AuthorizationPolicy}, &ap); err != nil {
		t.Fatal(err)
	}
	return &ap.Spec
}

func allowed(t *testing.T, spec *securityv1beta1.AuthorizationPolicy, r istioauthz.Request) bool {
	t.Helper()
	d, err := istioauthz.Evaluate([]*securityv1beta1.AuthorizationPolicy{spec}, r)
	if err != nil {
		t.Fatal(err)
	}
	return d.Allowed
}

// TestGroupOwner makes a Profile owned by Group ml-team: its members are
// the namespace's admins by RBAC and reach it through the gateway by the
// groups header or claim; a user named like the group is neither.
func TestGroupOwner(t *testing.T) {
	ensureAdminRole(t)
	run := "group-" + rand.String(4)
	startCore(t, run, map[string]any{"groups": map[string]string{"header": "kubeflow-groups", "claim": "groups"}})
	name := "group-" + rand.String(5)
	newProfile(t, name, run, "", groupOwned("ml-team"))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "7 objects in sync")

	var rb rbacv1.RoleBinding
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: core.OwnerRoleBinding}, &rb); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "ml-team"}}
	if diff := cmp.Diff(want, rb.Subjects); diff != "" {
		t.Errorf("%s subjects (-want +got):\n%s", core.OwnerRoleBinding, diff)
	}

	t.Run("RBAC: members are admins of the namespace, others are not", func(t *testing.T) {
		for _, c := range []struct {
			reason, user string
			groups       []string
			verb, res    string
			namespace    string
			want         bool
		}{
			{"a member creates pods", "carol@example.org", []string{"data", "ml-team"}, "create", "pods", name, true},
			{"a member lists secrets", "carol@example.org", []string{"ml-team"}, "list", "secrets", name, true},
			{"not in another namespace", "carol@example.org", []string{"ml-team"}, "list", "secrets", "default", false},
			{"a user of another group", "dave@example.org", []string{"other-team"}, "create", "pods", name, false},
			{"a user named like the group", "ml-team", nil, "list", "secrets", name, false},
		} {
			if got := can(t, c.user, c.groups, c.verb, c.res, c.namespace); got != c.want {
				t.Errorf("%s: %s %v may %s %s in %s = %v, want %v", c.reason, c.user, c.groups, c.verb, c.res, c.namespace, got, c.want)
			}
		}
	})

	t.Run("Istio: the group's header or claim through the gateway", func(t *testing.T) {
		spec := livePolicy(t, name)
		for _, c := range []struct {
			reason string
			req    istioauthz.Request
			want   bool
		}{
			{"the group's header", fromGateway("kubeflow-groups", "data,ml-team"), true},
			{"the group's claim", withClaim("a", "ml-team", "b"), true},
			{"a user named like the group", fromGateway("kubeflow-userid", "ml-team"), false},
			{"the header from another workload", stranger("kubeflow-groups", "ml-team"), false},
		} {
			if got := allowed(t, spec, c.req); got != c.want {
				t.Errorf("%s: allowed = %v, want %v", c.reason, got, c.want)
			}
		}
	})
}

// TestUnmatchableGroupOwner owns a Profile by a group that Istio cannot
// match exactly: the namespace and its RBAC are made all the same, the
// policy admits no one by a header, and the condition names the group.
func TestUnmatchableGroupOwner(t *testing.T) {
	run := "badgroup-" + rand.String(4)
	startCore(t, run, map[string]any{"groups": map[string]string{"header": "kubeflow-groups"}})
	name := "badgroup-" + rand.String(5)
	newProfile(t, name, run, "", groupOwned("*"))
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, plugins.ReasonInvalidSpec)
	if want := `group "*": Istio would read the "*" as a wildcard`; !strings.Contains(cond.Message, want) {
		t.Errorf("condition %q does not name the group (%s)", cond.Message, want)
	}
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
		t.Fatalf("namespace not made: %v", err)
	}
	var rb rbacv1.RoleBinding
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: core.OwnerRoleBinding}, &rb); err != nil {
		t.Fatalf("%s not made: %v", core.OwnerRoleBinding, err)
	}
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var ap securityv1.AuthorizationPolicy
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: core.AuthorizationPolicy}, &ap)
		return err == nil, fmt.Sprintf("policy: %v", err)
	})
	spec := livePolicy(t, name)
	for _, r := range []istioauthz.Request{fromGateway("kubeflow-groups", "*"), fromGateway("kubeflow-groups", "ml-team"), fromGateway("kubeflow-userid", "*")} {
		if allowed(t, spec, r) {
			t.Errorf("request %v allowed by the policy of an owner it cannot admit", r.Headers)
		}
	}
	if !allowed(t, spec, istioauthz.Request{Principal: "cluster.local/ns/" + name + "/sa/default-editor", Namespace: name}) {
		t.Error("the namespace's own workloads are shut out: the rest of the policy must still apply")
	}
}
