package templates_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// refusals are host defaults with a Role for every Profile and, for the
// Profiles labelled case=<name>, a template that fails for them.
const refusals = `
templates:
- name: log-reader
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: pod-log-reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}
- name: widget
  profileSelector: {matchLabels: {case: unserved}}
  object: {apiVersion: widgets.example.org/v1, kind: Widget, metadata: {name: w}}
- name: cluster-widget
  profileSelector: {matchLabels: {case: cluster}}
  object: {apiVersion: widgets.example.org/v1, kind: ClusterWidget, metadata: {name: w}}
- name: by-team
  profileSelector: {matchLabels: {case: render}}
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ .Label "example.org/team" }}-settings'}, data: {team: '{{ .Label "example.org/team" }}'}}
- name: grant
  profileSelector: {matchLabels: {case: deny}}
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: grant}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: '{{ .Label "example.org/role" }}'}
    subjects: [{kind: User, name: '{{ .Owner }}'}]
- name: settings
  profileSelector: {matchLabels: {case: foreign}}
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}
- name: no-verbs
  profileSelector: {matchLabels: {case: invalid}}
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: no-verbs}, rules: [{apiGroups: [""], resources: [pods]}]}
`

// Each template that fails for a Profile sets TemplatesReady False, with
// the reason and a line that names the template and the object, and
// deletes nothing: the Role every Profile gets is still written, and what
// the failing template made before stays as it is.
func TestRefusals(t *testing.T) {
	startHost(t, refusals, time.Hour)
	// start makes a Profile of the case and waits for its Role.
	start := func(t *testing.T, labels map[string]string) string {
		name := uniqueName("refused")
		testhost.NewProfile(t, env.Client, name, labels)
		waitFor(t, roleKind, name, "pod-log-reader", nil)
		return name
	}
	t.Run("a kind the cluster does not serve", func(t *testing.T) {
		name := start(t, map[string]string{"case": "unserved"})
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			plugins.ReasonInvalidConfig+": template widget: Widget "+name+"/w: the cluster does not serve widgets.example.org/v1 Widget")
	})
	t.Run("a kind the cluster serves cluster-scoped", func(t *testing.T) {
		name := start(t, map[string]string{"case": "cluster"})
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			plugins.ReasonInvalidConfig+": template cluster-widget: ClusterWidget "+name+"/w: kind ClusterWidget.widgets.example.org is cluster-scoped")
		if get(t, clusterKind, "", "w") != nil {
			t.Error("a ClusterWidget was written")
		}
	})
	t.Run("a template that no longer renders", func(t *testing.T) {
		name := start(t, map[string]string{"case": "render", teamLabel: "data"})
		cm := waitFor(t, configMapKind, name, "data-settings", nil)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { delete(p.Labels, teamLabel) })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			plugins.ReasonInvalidLabel+`: template by-team: ConfigMap `+name+`/{{ .Label "example.org/team" }}-settings: the Profile has no such label`)
		stays(t, configMapKind, name, "data-settings", string(cm.GetUID()), cm.GetResourceVersion())
	})
	t.Run("a binding of a role the host denies", func(t *testing.T) {
		name := start(t, map[string]string{"case": "deny", "example.org/role": "view"})
		rb := waitFor(t, bindingKind, name, "grant", nil)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Labels["example.org/role"] = "admin" })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			plugins.ReasonInvalidConfig+`: template grant: RoleBinding `+name+`/grant: RoleBinding grants role "admin", which the host denies (deniedRoles)`)
		stays(t, bindingKind, name, "grant", string(rb.GetUID()), rb.GetResourceVersion())
	})
	t.Run("an object of the wanted name that is not ours", func(t *testing.T) {
		name := start(t, nil)
		foreign := &corev1.ConfigMap{}
		foreign.Namespace, foreign.Name, foreign.Data = name, "settings", map[string]string{"mine": "yes"}
		if err := env.Client.Create(t.Context(), foreign); err != nil {
			t.Fatal(err)
		}
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Labels = map[string]string{"case": "foreign"} })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			plugins.ReasonConflict+": template settings: ConfigMap "+name+"/settings exists and is not managed by plugin templates")
		stays(t, configMapKind, name, "settings", string(foreign.UID), foreign.ResourceVersion)
	})
	t.Run("an object the API server refuses", func(t *testing.T) {
		name := start(t, map[string]string{"case": "invalid"})
		cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			plugins.ReasonInvalidConfig+": template no-verbs: create Role "+name+"/no-verbs: ")
		if !strings.Contains(cond.Message, "is invalid") || !strings.Contains(cond.Message, "rules[0].verbs: Required value") {
			t.Errorf("condition message %q does not say what the API server refused", cond.Message)
		}
	})
}
