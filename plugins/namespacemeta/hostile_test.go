package namespacemeta_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
)

// The hostile suite of the namespace's keys. Where self-serve is on, the
// access-management service writes a Profile's spec from the tenant's
// request, so the tenant chooses the plugin's spec: here the tenant holds
// Kubeflow's rights in its namespace and may change its own Profile. What
// the namespace's labels and annotations decide (Pod Security, the mesh,
// who owns the namespace, which nodes run it, which NetworkPolicies select
// it) is the platform's: a key the host does not allow writes nothing at
// all, and the namespace stays exactly as it was.

// selfServeTenant returns a client that acts as a user who holds
// testhost.TenantRules in namespace name and may read and change the
// Profile name, as the access-management service does for its owner.
func selfServeTenant(t *testing.T, name string) client.Client {
	t.Helper()
	user := "tenant-" + name
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: user}, Rules: testhost.TenantRules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: user}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{kubeflowv1.GroupVersion.Group}, Resources: []string{"profiles"}, ResourceNames: []string{name}, Verbs: []string{"get", "update", "patch"},
		}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
	}
	for _, o := range objs {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(t.Context(), o) })
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// marked makes a namespace and a Profile of the owner, the Profile listing
// the plugin with an allowed label and annotation, and waits until the
// namespace carries them.
func marked(t *testing.T, prefix string) string {
	t.Helper()
	name := newNamespace(t, prefix)
	before := namespaceMeta(t, name)
	newProfile(t, name, spec(t, map[string]string{"istio.io/rev": "canary", "example.org/cost-centre": "cc-1"}, map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=a"}))
	waitLabels(t, name, with(before.Labels, "istio.io/rev", "canary", "example.org/cost-centre", "cc-1"))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	return name
}

// Every class of key a tenant may not set, each with an allowed change of
// value beside it and an allowed key dropped: the condition names the key,
// and the namespace keeps every label and annotation it had.
func TestTenantSetsKeysTheHostDoesNotAllow(t *testing.T) {
	startHost(t, hostDefaults(t))
	for _, tc := range []struct {
		reason string
		// labels and annotations are added to the tenant's spec, or spec
		// replaces it whole.
		labels, annotations map[string]string
		spec                map[string]any
		names               string
	}{
		{reason: "Kubernetes' own prefix kubernetes.io", labels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}, names: "labels[kubernetes.io/metadata.name]"},
		{reason: "Kubernetes' own prefix k8s.io", annotations: map[string]string{"k8s.io/cluster-service": "true"}, names: "annotations[k8s.io/cluster-service]"},
		{reason: "profilekit's ownership labels", labels: plugins.OwnershipLabels(core.Kind, "victim"), names: "labels[app.kubernetes.io/managed-by]"},
		{reason: "profilekit's domain", annotations: map[string]string{plugins.AnnotationPaused: "true"}, names: "annotations[" + plugins.AnnotationPaused + "]"},
		{reason: "the owner annotation", annotations: map[string]string{core.AnnotationOwner: "mallory@example.org"}, names: "annotations[owner]"},
		{reason: "the core plugin's mesh label", labels: map[string]string{core.LabelIstioInjection: "disabled"}, names: "labels[istio-injection]"},
		{reason: "a key of the labels file", labels: map[string]string{"example.org/billing": "free"}, names: "labels[example.org/billing]"},
		{reason: "a key the host does not list", annotations: map[string]string{"scheduler.alpha.kubernetes.io/defaultTolerations": `[{"operator":"Exists"}]`}, names: "annotations[scheduler.alpha.kubernetes.io/defaultTolerations]"},
		{reason: "a value outside the host's pattern", labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}, names: "labels[pod-security.kubernetes.io/enforce]"},
		{reason: "the host's allowlist", spec: map[string]any{"allow": map[string]any{"labels": []any{map[string]any{"key": "kubernetes.io/*"}}}}, names: `"allow"`},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			name := marked(t, "hostile")
			before := namespaceMeta(t, name)
			tenant := selfServeTenant(t, name)

			s := tc.spec
			if s == nil {
				s = map[string]any{
					"labels":      with(map[string]string{"istio.io/rev": "stable"}, flat(tc.labels)...),
					"annotations": tc.annotations,
				}
			}
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var p kubeflowv1.Profile
			if err := tenant.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				t.Fatalf("the tenant reads its Profile: %v", err)
			}
			p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: namespacemeta.Kind}, Spec: &runtime.RawExtension{Raw: raw}}}
			if err := tenant.Update(t.Context(), &p); err != nil {
				t.Fatalf("the tenant changes its Profile: %v", err)
			}

			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, tc.names)
			c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, plugins.ReasonInvalidSpec)
			t.Logf("condition: %s", c.Message)
			if diff := cmp.Diff(before, namespaceMeta(t, name)); diff != "" {
				t.Errorf("namespace (-before +after):\n%s", diff)
			}
		})
	}
}

// flat lists m's keys and values, for with.
func flat(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}

// The tenant cannot reach the namespace's keys itself: its rights end at
// the objects in its namespace.
func TestTenantCannotWriteTheNamespace(t *testing.T) {
	startHost(t, hostDefaults(t))
	name := marked(t, "direct")
	before := namespaceMeta(t, name)
	tenant := selfServeTenant(t, name)
	patch := []byte(`{"metadata":{"labels":{"istio-injection":"disabled","istio.io/rev":null}}}`)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := tenant.Patch(t.Context(), ns, client.RawPatch(types.MergePatchType, patch)); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant patches its namespace: %v, want Forbidden", err)
	}
	if diff := cmp.Diff(before, namespaceMeta(t, name)); diff != "" {
		t.Errorf("namespace (-before +after):\n%s", diff)
	}
}

// A Profile named after a namespace that is not its owner's (a system
// namespace, or one of another owner) is a Conflict, and that namespace is
// not written, however allowed the keys.
func TestNamespaceOfAnotherOwnerIsLeftAlone(t *testing.T) {
	startHost(t, hostDefaults(t))
	for _, tc := range []struct {
		reason      string
		annotations map[string]string
	}{
		{"no owner annotation", nil},
		{"another owner", map[string]string{core.AnnotationOwner: "bob@example.org"}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			name := "system-" + rand.String(5)
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: tc.annotations}}
			if err := env.Client.Create(t.Context(), ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
			before := namespaceMeta(t, name)
			newProfile(t, name, spec(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}, nil))
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, plugins.ReasonConflict+": read Namespace /"+name+": namespace "+name+" is not the Profile's")
			if diff := cmp.Diff(before, namespaceMeta(t, name)); diff != "" {
				t.Errorf("namespace (-before +after):\n%s", diff)
			}
		})
	}
}
