package contributors_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{Istio: true}) }

const condType = "ContributorsReady"

// hostConfig is a platform's: a groups header, users of one domain, at
// most four entries; admin and service accounts stay off.
const hostConfig = `{"groups": {"header": "kubeflow-groups"}, "userDomains": ["*@example.org"], "maxContributors": 4}`

// start runs the plugin. The resync period is long: what a test sees
// happen within seconds, watches did.
func start(t *testing.T) *testhost.Host {
	t.Helper()
	return testhost.Start(t, env, testhost.Plugin{Def: contributors.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(hostConfig)),
		reconcilers.WithResync(10 * time.Minute),
	}})
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func entry(kind, name, role string) map[string]string {
	return map[string]string{"kind": kind, "name": name, "role": role}
}

func plugin(entries ...map[string]string) kubeflowv1.Plugin {
	raw, _ := json.Marshal(map[string]any{"contributors": entries})
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: contributors.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
}

// declare sets the Profile's contributors; none removes the plugin.
func declare(t *testing.T, profile string, entries ...map[string]string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, profile, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = nil
		if entries != nil {
			p.Spec.Plugins = []kubeflowv1.Plugin{plugin(entries...)}
		}
	})
}

// owned returns our RoleBindings and AuthorizationPolicies in ns by name.
func owned(t *testing.T, ns string) (map[string]rbacv1.RoleBinding, map[string]*securityv1.AuthorizationPolicy) {
	t.Helper()
	sel := client.MatchingLabels(plugins.OwnershipLabels(contributors.Kind, ns))
	var rbs rbacv1.RoleBindingList
	var aps securityv1.AuthorizationPolicyList
	if err := env.Client.List(t.Context(), &rbs, client.InNamespace(ns), sel); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(t.Context(), &aps, client.InNamespace(ns), sel); err != nil {
		t.Fatal(err)
	}
	bs := map[string]rbacv1.RoleBinding{}
	for _, b := range rbs.Items {
		bs[b.Name] = b
	}
	ps := map[string]*securityv1.AuthorizationPolicy{}
	for _, p := range aps.Items {
		ps[p.Name] = p
	}
	return bs, ps
}

// waitOwned waits until our bindings and policies in ns are exactly those
// named.
func waitOwned(t *testing.T, ns string, bindings, policies []string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		bs, ps := owned(t, ns)
		got := [2][]string{slices.Sorted(maps.Keys(bs)), slices.Sorted(maps.Keys(ps))}
		want := [2][]string{slices.Sorted(slices.Values(bindings)), slices.Sorted(slices.Values(policies))}
		d := cmp.Diff(want, got)
		return d == "", "our bindings and policies (-want +got):\n" + d
	})
}

// kfamList lists the contributors of ns as the access-management service
// does: every RoleBinding with both the user and the role annotation, which
// must have exactly one subject (KFAM fails the whole list otherwise), as
// "Kind name role", where role maps back from the roleRef.
func kfamList(t *testing.T, ns string) []string {
	t.Helper()
	var rbs rbacv1.RoleBindingList
	if err := env.Client.List(t.Context(), &rbs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{"kubeflow-admin": "admin", "kubeflow-edit": "edit", "kubeflow-view": "view"}
	var out []string
	for _, rb := range rbs.Items {
		_, hasUser := rb.Annotations["user"]
		role, hasRole := rb.Annotations["role"]
		if !hasUser || !hasRole {
			continue
		}
		if len(rb.Subjects) != 1 {
			t.Fatalf("KFAM cannot list %s: binding subject length not equal to 1, actual length: %d", rb.Name, len(rb.Subjects))
		}
		if roles[rb.RoleRef.Name] != role {
			t.Errorf("%s: role annotation %q, roleRef %s", rb.Name, role, rb.RoleRef.Name)
		}
		out = append(out, fmt.Sprintf("%s %s %s", rb.Subjects[0].Kind, rb.Subjects[0].Name, roles[rb.RoleRef.Name]))
	}
	slices.Sort(out)
	return out
}

func waitKFAMList(t *testing.T, ns string, want ...string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		d := cmp.Diff(want, kfamList(t, ns))
		return d == "", "KFAM's list of contributors (-want +got):\n" + d
	})
}

// handMade makes what KFAM's CreateBinding makes for user and role: a
// RoleBinding and an AuthorizationPolicy of KFAM's name, without labels.
func handMade(t *testing.T, ns, user, role string) (*rbacv1.RoleBinding, *securityv1.AuthorizationPolicy) {
	t.Helper()
	name := contributors.BindingName("User", user, role)
	annotations := map[string]string{"user": user, "role": role}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-" + role},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	}
	ap := &securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
	ap.Spec.Rules = []*securityv1beta1.Rule{{
		When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{user}}},
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gatewayPrincipal, pipelinesUI}}}},
	}}
	for _, o := range []client.Object{rb, ap} {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	return rb, ap
}

// unchanged fails when any of objs changed since it was read.
func unchanged(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		now := o.DeepCopyObject().(client.Object)
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), now); err != nil {
			t.Errorf("%T %s: %v", o, o.GetName(), err)
			continue
		}
		if now.GetResourceVersion() != o.GetResourceVersion() || now.GetUID() != o.GetUID() || len(now.GetLabels()) != 0 || len(now.GetOwnerReferences()) != 0 {
			t.Errorf("%T %s was touched: resourceVersion %s -> %s, labels %v, owners %v", o, o.GetName(),
				o.GetResourceVersion(), now.GetResourceVersion(), now.GetLabels(), now.GetOwnerReferences())
		}
	}
}
