package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/profilekit/profilekit/examples/host/internal/page"
)

// TestOverviewRole: the kustomize base and the chart ship one ClusterRole
// for the page's admin overview, granting exactly what the page asks the
// API server before it opens (get on overview.profilekit.dev, cluster-wide),
// and the chart binds it to page.overview.subjects and to nobody by default.
func TestOverviewRole(t *testing.T) {
	want := []rbacv1.PolicyRule{{APIGroups: []string{page.OverviewGroup}, Resources: []string{page.OverviewResource}, Verbs: []string{page.OverviewVerb}}}
	rules := func(what string, objs []*unstructured.Unstructured) []rbacv1.PolicyRule {
		t.Helper()
		u := byKind(objs, "ClusterRole", "profilekit-overview")
		if u == nil {
			t.Fatalf("%s: no ClusterRole profilekit-overview", what)
		}
		var cr rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cr); err != nil {
			t.Fatal(err)
		}
		return cr.Rules
	}
	if diff := cmp.Diff(want, rules("kustomize base", kustomize(t, deployDir+"/base"))); diff != "" {
		t.Errorf("the kustomize base's overview ClusterRole (-want +got):\n%s", diff)
	}
	objs := helmTemplate(t)
	if diff := cmp.Diff(want, rules("chart", objs)); diff != "" {
		t.Errorf("the chart's overview ClusterRole (-want +got):\n%s", diff)
	}
	if byKind(objs, "ClusterRoleBinding", "profilekit-overview") != nil {
		t.Error("the chart binds the overview's ClusterRole with no page.overview.subjects")
	}

	objs = helmTemplate(t, "--set-json", `page.overview.subjects=[{"kind":"Group","name":"platform-admins","apiGroup":"rbac.authorization.k8s.io"}]`)
	u := byKind(objs, "ClusterRoleBinding", "profilekit-overview")
	if u == nil {
		t.Fatal("no ClusterRoleBinding profilekit-overview with page.overview.subjects set")
	}
	var crb rbacv1.ClusterRoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crb); err != nil {
		t.Fatal(err)
	}
	wantBinding := rbacv1.ClusterRoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "profilekit-overview"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "platform-admins", APIGroup: rbacv1.GroupName}},
	}
	if diff := cmp.Diff(wantBinding.RoleRef, crb.RoleRef); diff != "" {
		t.Errorf("roleRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBinding.Subjects, crb.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
}
