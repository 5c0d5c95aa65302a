package authpolicy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// upstreamPolicy is the upstream controller's policy, which the plugin
// must never write.
const upstreamPolicy = "ns-owner-access-istio"

// scenario is the authpolicy plugin under the package's host config
// (every rule form, several further policies) for a Profile whose
// namespace already holds upstream's own policy and one contributor: the
// policies are made, a second contributor joins, the first leaves and a
// group joins (the access policy is rewritten from the RoleBindings the
// plugin reads),
// the plugin is removed, added again, and the Profile deleted. Observe
// shows upstream's policy as it was made: neither a crash nor a stale or
// blind view may get the plugin to write or delete it; and no policy may
// admit, even for a moment, a contributor neither step has.
func scenario(t *testing.T) plugintest.Scenario {
	defaults, err := yaml.YAMLToJSON([]byte(hostConfig))
	if err != nil {
		t.Fatal(err)
	}
	return plugintest.Scenario{
		Def:      authpolicy.Definition(),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "create"},
			{Name: "bob joins", Change: contributor("bob@example.org", true)},
			{Name: "alice leaves", Change: contributor("alice@example.org", false)},
			{Name: "ml-team joins", Change: groupContributor("ml-team")},
			{Name: "remove", Remove: true},
			{Name: "add again"},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			if err := contributor("alice@example.org", true)(ctx, c, namespace); err != nil {
				return err
			}
			return c.Create(ctx, &securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Name: upstreamPolicy, Namespace: namespace}})
		},
		Retained: []string{"upstream's policy"}, // not the plugin's to take
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			var ap securityv1.AuthorizationPolicy
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: upstreamPolicy}, &ap); err != nil {
				return nil, err
			}
			b, err := json.Marshal(map[string]any{"labels": ap.Labels, "spec": &ap.Spec})
			return map[string]string{"upstream's policy": string(b)}, err
		},
	}
}

// contributor adds user to the namespace as the access-management
// service does (a RoleBinding of role edit, with its annotations), or
// takes them away.
func contributor(user string, add bool) func(context.Context, client.Client, string) error {
	return func(ctx context.Context, c client.Client, namespace string) error {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "user-" + strings.NewReplacer("@", "-", ".", "-").Replace(user) + "-clusterrole-edit",
				Annotations: map[string]string{authpolicy.AnnotationUser: user, authpolicy.AnnotationRole: "edit"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-edit"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if add {
			return c.Create(ctx, rb)
		}
		return c.Delete(ctx, rb)
	}
}

// groupContributor adds group to the namespace as the access-management
// service does: a RoleBinding of role view to the Group, named after it.
func groupContributor(group string) func(context.Context, client.Client, string) error {
	return func(ctx context.Context, c client.Client, namespace string) error {
		return c.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "group-" + group + "-clusterrole-view",
				Annotations: map[string]string{authpolicy.AnnotationUser: group, authpolicy.AnnotationRole: "view"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-view"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		})
	}
}

// TestSurvivesEveryPerturbation runs every crash, stale and unobserved
// plan of the scenario; the plugin calls no outside system.
func TestSurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, scenario, plugintest.ClusterPatterns...)
}
