package authpolicy_test

import (
	"testing"
	"time"

	securityv1beta1 "istio.io/api/security/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/profilekit/profilekit/internal/istioauthz"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// wantAccessGroups is wantAccess with the groups' rules after the users'.
func wantAccessGroups(ns string, groups []string, users ...string) *securityv1beta1.AuthorizationPolicy {
	spec := wantAccess(ns, users...)
	var values []string
	for _, g := range groups {
		values = append(values, g, g+",*", "*,"+g)
	}
	from := []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gateway}}}}
	rules := []*securityv1beta1.Rule{
		{From: from, When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-groups]", Values: values}}},
		{From: from, When: []*securityv1beta1.Condition{{Key: "request.auth.claims[groups]", Values: groups}}},
	}
	spec.Rules = append(spec.Rules[:1], append(rules, spec.Rules[1:]...)...)
	return spec
}

// groupBinding is the access-management service's binding of a group.
func groupBinding(ns, name, group, role string) *rbacv1.RoleBinding {
	rb := contributorBinding(ns, name, group, role)
	rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}}
	return rb
}

func evaluate(t *testing.T, spec *securityv1beta1.AuthorizationPolicy, header, value string) bool {
	t.Helper()
	d, err := istioauthz.Evaluate([]*securityv1beta1.AuthorizationPolicy{spec}, istioauthz.Request{
		Principal: gateway, Namespace: "istio-system", Headers: map[string]string{header: value}, Method: "GET", Path: "/",
	})
	if err != nil {
		t.Fatal(err)
	}
	return d.Allowed
}

// TestGroupContributors adds a group as the access-management service does:
// its members get in by the groups header or claim, a user named like it
// does not; a group that Istio cannot match is left out and reported while
// the rest of the policy stays.
func TestGroupContributors(t *testing.T) {
	start(t, time.Hour)
	name := uniqueName("groups")
	testhost.NewProfile(t, env.Client, name, nil, plugin())
	waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))

	if err := env.Client.Create(t.Context(), groupBinding(name, "group-ml-team-clusterrole-edit", "ml-team", "edit")); err != nil {
		t.Fatal(err)
	}
	ap := waitAccess(t, name, wantAccessGroups(name, []string{"ml-team"}, "accounts.example.org:"+owner))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "6 objects in sync")
	if !evaluate(t, &ap.Spec, "kubeflow-groups", "data,ml-team") {
		t.Error("a member of ml-team is shut out")
	}
	if evaluate(t, &ap.Spec, "kubeflow-userid", "accounts.example.org:ml-team") {
		t.Error("a user named like the group gets in")
	}

	// What the service names the binding of group "*".
	wild := groupBinding(name, "group-clusterrole-edit", "*", "edit")
	if err := env.Client.Create(t.Context(), wild); err != nil {
		t.Fatal(err)
	}
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `contributor: group "*": Istio would read the "*" as a wildcard`)
	ap = waitAccess(t, name, wantAccessGroups(name, []string{"ml-team"}, "accounts.example.org:"+owner))
	if evaluate(t, &ap.Spec, "kubeflow-groups", "*") || evaluate(t, &ap.Spec, "kubeflow-groups", "data") {
		t.Error("the wildcard group admits someone")
	}

	if err := env.Client.Delete(t.Context(), wild); err != nil {
		t.Fatal(err)
	}
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "6 objects in sync")
}
