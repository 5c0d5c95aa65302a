package authpolicy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{Istio: true}) }

const (
	condType = "AuthpolicyReady"
	owner    = "owner@example.org" // testhost.NewProfile's owner
	gateway  = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
	notebook = "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"
)

// hostConfig has every kind of rule: users, groups, same namespace, probes, the
// notebook controller, and further policies, among them forms the API server
// might store differently from what we send: a DENY without rules, an
// allow-all rule, ipBlocks with exceptions and a condition with notValues.
const hostConfig = `
userIDPrefix: "accounts.example.org:"
groups: {header: kubeflow-groups, claim: groups}
probePaths: [/healthz]
policies:
- name: deny-protected-b-transfers
  action: DENY
  selector: {data.example.ca/classification: protected-b}
  rules:
  - to:
    - operation:
        paths: ["/notebook/{{ .Namespace }}/*/files/*", "/notebook/{{ .Namespace }}/*/api/contents/*"]
        methods: [GET, PUT, POST]
- name: allow-monitoring
  action: ALLOW
  rules:
  - from:
    - source: {namespaces: [monitoring]}
    to:
    - operation: {ports: ["9090"], methods: [GET]}
- name: edge-deny-nothing
  action: DENY
  rules: []
- name: edge-allow-all
  action: ALLOW
  selector: {app: public}
  rules: [{}]
- name: edge-sources
  action: DENY
  rules:
  - from:
    - source: {ipBlocks: [203.0.113.0/24], notIpBlocks: [203.0.113.7/32]}
    - source: {notNamespaces: ["{{ .Namespace }}"], notPrincipals: ["cluster.local/ns/{{ .Namespace }}/sa/default-editor"]}
    when:
    - {key: destination.port, notValues: ["15020"]}
`

// start runs the plugin with a resync period: short where a test counts
// requests over several resyncs, long where only watches may wake it.
func start(t *testing.T, resync time.Duration) *testhost.Host {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(hostConfig))
	if err != nil {
		t.Fatal(err)
	}
	return testhost.Start(t, env, testhost.Plugin{Def: authpolicy.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(js),
		reconcilers.WithResync(resync),
	}})
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func plugin() kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: authpolicy.Kind}}
}

func getPolicy(ns, name string) (*securityv1.AuthorizationPolicy, error) {
	var ap securityv1.AuthorizationPolicy
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ap) //nolint:forbidigo // no *testing.T in reach
	return &ap, err
}

// wantAccess is the exact access policy spec for the users given (header
// values, prefix included).
func wantAccess(ns string, users ...string) *securityv1beta1.AuthorizationPolicy {
	return &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{
		{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gateway}}}},
			When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-userid]", Values: users}},
		},
		{From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Namespaces: []string{ns}}}}},
		{To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET", "HEAD"}, Paths: []string{"/healthz"}}}}},
		{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{notebook}}}},
			To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Paths: []string{"/notebook/" + ns + "/*"}}}},
		},
	}}
}

// waitAccess waits until the access policy's spec is exactly want.
func waitAccess(t *testing.T, ns string, want *securityv1beta1.AuthorizationPolicy) *securityv1.AuthorizationPolicy {
	t.Helper()
	var got *securityv1.AuthorizationPolicy
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		ap, err := getPolicy(ns, authpolicy.DefaultName)
		if err != nil {
			return false, err.Error()
		}
		got = ap
		d := cmp.Diff(want, &ap.Spec, protocmp.Transform())
		return d == "", "access policy spec (-want +got):\n" + d
	})
	return got
}

func contributorBinding(ns, name, user, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"user": user, "role": role}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-" + role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
}

// TestContributorsComeAndGo runs with a resync period longer than the test,
// so every change it sees came through the RoleBinding watch.
func TestContributorsComeAndGo(t *testing.T) {
	start(t, time.Hour)
	name := uniqueName("access")
	p := testhost.NewProfile(t, env.Client, name, nil, plugin())

	// Upstream's own policy sits in the namespace and must never be touched.
	upstream := &securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ns-owner-access-istio", Namespace: name}}
	upstream.Spec.Rules = []*securityv1beta1.Rule{{When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{owner}}}}}
	if err := env.Client.Create(t.Context(), upstream); err != nil {
		t.Fatal(err)
	}

	ap := waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "6 objects in sync")
	if diff := cmp.Diff(plugins.OwnershipLabels(authpolicy.Kind, name), ap.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(ap.OwnerReferences) != 1 || ap.OwnerReferences[0].UID != p.UID {
		t.Errorf("owner references = %+v, want one to Profile %s", ap.OwnerReferences, name)
	}

	t.Run("the further policies are accepted as configured", func(t *testing.T) {
		deny, err := getPolicy(name, "deny-protected-b-transfers")
		if err != nil {
			t.Fatal(err)
		}
		want := &securityv1beta1.AuthorizationPolicy{
			Action: securityv1beta1.AuthorizationPolicy_DENY,
			Rules: []*securityv1beta1.Rule{{To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{
				Methods: []string{"GET", "PUT", "POST"},
				Paths:   []string{"/notebook/" + name + "/*/files/*", "/notebook/" + name + "/*/api/contents/*"},
			}}}}},
		}
		want.Selector = deny.Spec.Selector // checked on its own below
		if diff := cmp.Diff(want, &deny.Spec, protocmp.Transform()); diff != "" {
			t.Errorf("deny policy (-want +got):\n%s", diff)
		}
		if got := deny.Spec.GetSelector().GetMatchLabels(); !cmp.Equal(got, map[string]string{"data.example.ca/classification": "protected-b"}) {
			t.Errorf("deny policy selector = %v", got)
		}
		if _, err := getPolicy(name, "allow-monitoring"); err != nil {
			t.Errorf("allow-monitoring: %v", err)
		}
		if all, err := getPolicy(name, "edge-allow-all"); err != nil || len(all.Spec.Rules) != 1 || all.Spec.Action != securityv1beta1.AuthorizationPolicy_ALLOW {
			t.Errorf("edge-allow-all = %v (%v), want ALLOW with its one empty rule", all.Spec.String(), err)
		}
		if none, err := getPolicy(name, "edge-deny-nothing"); err != nil || len(none.Spec.Rules) != 0 || none.Spec.Action != securityv1beta1.AuthorizationPolicy_DENY {
			t.Errorf("edge-deny-nothing = %v (%v), want DENY without rules", none.Spec.String(), err)
		}
		src, err := getPolicy(name, "edge-sources")
		if err != nil {
			t.Fatal(err)
		}
		if got := src.Spec.Rules[0].From[1].Source.NotPrincipals; !slices.Equal(got, []string{"cluster.local/ns/" + name + "/sa/default-editor"}) {
			t.Errorf("edge-sources notPrincipals = %v, want the namespace put in", got)
		}
	})

	bob := contributorBinding(name, "user-bob-example-org-clusterrole-edit", "bob@example.org", "edit")
	carol := contributorBinding(name, "user-carol-example-org-clusterrole-view", "carol@example.org", "view")
	t.Run("adding contributor bindings adds them, sorted", func(t *testing.T) {
		// An admin binding and an unannotated one must not count.
		admin := contributorBinding(name, "namespace-admin-like", "root@example.org", "admin")
		plain := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dave@example.org"}},
		}
		start := time.Now()
		for _, rb := range []*rbacv1.RoleBinding{carol, admin, plain, bob} {
			if err := env.Client.Create(t.Context(), rb); err != nil {
				t.Fatal(err)
			}
		}
		waitAccess(t, name, wantAccess(name, "accounts.example.org:bob@example.org", "accounts.example.org:carol@example.org", "accounts.example.org:"+owner))
		t.Logf("contributors in the policy %s after the bindings were created", time.Since(start).Round(time.Millisecond))
	})

	t.Run("removing a contributor binding removes exactly that user", func(t *testing.T) {
		start := time.Now()
		if err := env.Client.Delete(t.Context(), bob); err != nil {
			t.Fatal(err)
		}
		ap := waitAccess(t, name, wantAccess(name, "accounts.example.org:carol@example.org", "accounts.example.org:"+owner))
		t.Logf("bob gone from the policy %s after his binding was deleted", time.Since(start).Round(time.Millisecond))
		// The exact values the gateway-bound rule now trusts.
		rule := ap.Spec.Rules[0]
		if got := rule.From[0].Source.Principals; !slices.Equal(got, []string{gateway}) {
			t.Errorf("principals = %v, want only the gateway", got)
		}
		if got := rule.When[0].Key; got != "request.headers[kubeflow-userid]" {
			t.Errorf("header key = %q", got)
		}
		if got := rule.When[0].Values; !slices.Equal(got, []string{"accounts.example.org:carol@example.org", "accounts.example.org:" + owner}) {
			t.Errorf("header values = %v, want carol and the owner only", got)
		}
		for _, r := range ap.Spec.Rules {
			for _, c := range r.When {
				if slices.ContainsFunc(c.Values, func(v string) bool { return strings.Contains(v, "bob") }) {
					t.Errorf("bob still in rule %v", r)
				}
			}
		}
	})

	t.Run("a binding whose role changes to one that does not count drops the user", func(t *testing.T) {
		var rb rbacv1.RoleBinding
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(carol), &rb); err != nil {
			t.Fatal(err)
		}
		rb.Annotations["role"] = "admin"
		if err := env.Client.Update(t.Context(), &rb); err != nil {
			t.Fatal(err)
		}
		waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))
	})

	t.Run("a user added to our policy by hand is removed", func(t *testing.T) {
		ap, err := getPolicy(name, authpolicy.DefaultName)
		if err != nil {
			t.Fatal(err)
		}
		ap.Spec.Rules[0].When[0].Values = append(ap.Spec.Rules[0].When[0].Values, "accounts.example.org:mallory@example.org")
		if err := env.Client.Update(t.Context(), ap); err != nil {
			t.Fatal(err)
		}
		waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))
	})

	t.Run("upstream's policy was never touched", func(t *testing.T) {
		got, err := getPolicy(name, "ns-owner-access-istio")
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != upstream.ResourceVersion || len(got.Labels) != 0 {
			t.Errorf("ns-owner-access-istio changed: resourceVersion %s -> %s, labels %v", upstream.ResourceVersion, got.ResourceVersion, got.Labels)
		}
	})

	t.Run("removing the plugin deletes ours and keeps upstream's", func(t *testing.T) {
		var cur kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Plugins = nil
		if err := env.Client.Update(t.Context(), &cur); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var list securityv1.AuthorizationPolicyList
			if err := env.Client.List(t.Context(), &list, client.InNamespace(name)); err != nil {
				return false, err.Error()
			}
			var names []string
			for _, ap := range list.Items {
				names = append(names, ap.Name)
			}
			return slices.Equal(names, []string{"ns-owner-access-istio"}), fmt.Sprintf("policies %v", names)
		})
	})
}

// TestResyncWithNothingChangedSendsNothing covers all three policies, the
// access policy with contributors, over several resyncs.
func TestResyncWithNothingChangedSendsNothing(t *testing.T) {
	h := start(t, 300*time.Millisecond)
	name := uniqueName("resync")
	testhost.NewProfile(t, env.Client, name, nil, plugin())
	for _, rb := range []*rbacv1.RoleBinding{
		contributorBinding(name, "user-bob", "bob@example.org", "edit"),
		contributorBinding(name, "user-carol", "carol@example.org", "view"),
	} {
		if err := env.Client.Create(t.Context(), rb); err != nil {
			t.Fatal(err)
		}
	}
	waitAccess(t, name, wantAccess(name, "accounts.example.org:bob@example.org", "accounts.example.org:carol@example.org", "accounts.example.org:"+owner))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "6 objects in sync")
	// Passes and Events set off by the last change may still be in flight;
	// let them finish before counting.
	if got := h.ResyncWrites(t, 3, authpolicy.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", got)
	}
}

// TestUnrelatedRoleBindingsDoNotWakeThePlugin runs with a long resync, so
// that any reconcile in the window was caused by the bindings.
func TestUnrelatedRoleBindingsDoNotWakeThePlugin(t *testing.T) {
	start(t, time.Hour)
	name := uniqueName("quiet")
	testhost.NewProfile(t, env.Client, name, nil, plugin())
	waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))

	other := uniqueName("other")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // let the first passes settle
	before := testhost.Reconciles(t, authpolicy.Kind)
	for i := range 20 {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i), Namespace: other},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "x@example.org"}},
		}
		if err := env.Client.Create(t.Context(), rb); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	if n := testhost.Reconciles(t, authpolicy.Kind) - before; n != 0 {
		t.Errorf("%v reconciles after 20 unrelated role bindings were created, want none", n)
	}
}
