package templates_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/templates"
	"github.com/profilekit/profilekit/reconcilers"
)

// hostileDefaults give every Profile two ConfigMaps and a Role, and gold
// Profiles that ask for it a third ConfigMap.
const hostileDefaults = `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: team-settings}, data: {namespace: '{{ .Namespace }}'}}
- name: limits
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: profile-limits}, data: {gpus: "0"}}
- name: log-reader
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: pod-log-reader}, rules: [{apiGroups: [""], resources: [pods/log], verbs: [get]}]}
- name: gold
  optIn: true
  profileSelector: {matchLabels: {tier: gold}}
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: gold-settings}, data: {gpus: "8"}}
`

// A tenant with Kubeflow's rights in its namespace, impersonated, cannot
// make the plugin write over its own object, keep a hand edit of ours, keep
// ours deleted, or get a template its Profile is not offered; asking for
// one, or for one the host does not have, is refused and deletes nothing.
// The Profile's spec is written as the access-management service writes
// what a tenant asks for when self-serve is on.
func TestHostileTenant(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: templates.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaultsJSON(t, hostileDefaults)), reconcilers.WithResync(time.Hour),
	}})
	name := uniqueName("hostile")
	testhost.NewProfile(t, env.Client, name, nil)
	tenant := testhost.Tenant(t, env, name)

	// The tenant takes the name of one of the objects first.
	mine := &corev1.ConfigMap{}
	mine.Namespace, mine.Name, mine.Data = name, "team-settings", map[string]string{"mine": "yes"}
	if err := tenant.Create(t.Context(), mine); err != nil {
		t.Fatalf("tenant creates a ConfigMap: %v", err)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{enable()} })
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
		plugins.ReasonConflict+": template settings: ConfigMap "+name+"/team-settings exists and is not managed by plugin templates")
	stays(t, configMapKind, name, "team-settings", string(mine.UID), mine.ResourceVersion)
	limits := waitFor(t, configMapKind, name, "profile-limits", nil)
	waitFor(t, roleKind, name, "pod-log-reader", nil)

	// An edit of ours is put back, and so is a deletion.
	var cm corev1.ConfigMap
	if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "profile-limits"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["gpus"] = "64"
	if err := tenant.Update(t.Context(), &cm); err != nil {
		t.Fatalf("tenant edits our ConfigMap: %v", err)
	}
	waitFor(t, configMapKind, name, "profile-limits", func(u *unstructured.Unstructured) (bool, string) {
		gpus, _, _ := unstructured.NestedString(u.Object, "data", "gpus")
		return gpus == "0", "gpus is " + gpus
	})
	if err := tenant.Delete(t.Context(), &cm); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("tenant deletes our ConfigMap: %v", err)
	}
	limits = waitFor(t, configMapKind, name, "profile-limits", func(u *unstructured.Unstructured) (bool, string) {
		return u.GetUID() != limits.GetUID(), "the deleted ConfigMap is not back"
	})

	// Asking for a template the Profile is not offered, or one the host does
	// not have, is refused, gets nothing and deletes nothing.
	for _, tt := range []struct{ ask, want string }{
		{ask: "gold", want: plugins.ReasonInvalidSpec + ": template gold: enable names it, but it is not offered to this Profile"},
		{ask: "platform-admin", want: plugins.ReasonInvalidSpec + `: spec.plugins[0] (templates).spec: enable[0]: "platform-admin": no such template; the host offers gold`},
	} {
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{enable(tt.ask)} })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, tt.want)
		if get(t, configMapKind, name, "gold-settings") != nil {
			t.Fatalf("asking for %s got the gold ConfigMap", tt.ask)
		}
		stays(t, configMapKind, name, "profile-limits", string(limits.GetUID()), limits.GetResourceVersion())
	}

	// The tenant gives up its name: the template's object is written, and
	// the gold Profile gets what it asks for.
	if err := tenant.Delete(t.Context(), mine); err != nil {
		t.Fatal(err)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Labels = map[string]string{"tier": "gold"}
		p.Spec.Plugins = []kubeflowv1.Plugin{enable("gold")}
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	waitFor(t, configMapKind, name, "team-settings", nil)
	waitFor(t, configMapKind, name, "gold-settings", nil)
}
