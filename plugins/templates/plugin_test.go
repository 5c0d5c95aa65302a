package templates_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/templates"
	"github.com/profilekit/profilekit/reconcilers"
)

// ours checks that u carries the plugin's labels and owner reference for
// the Profile p, and our server-side apply entry.
func ours(t *testing.T, u *unstructured.Unstructured, p *kubeflowv1.Profile) {
	t.Helper()
	if !plugins.IsOwnedBy(u.GetLabels(), templates.Kind, p.Name) {
		t.Errorf("%s %s labels = %v, want ours for %s", u.GetKind(), u.GetName(), u.GetLabels(), p.Name)
	}
	if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != p.UID {
		t.Errorf("%s %s owner references = %+v, want the Profile", u.GetKind(), u.GetName(), refs)
	}
	if !slices.ContainsFunc(u.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == plugins.FieldManagerFor(templates.Kind) && m.Operation == metav1.ManagedFieldsOperationApply
	}) {
		t.Errorf("%s %s has no server-side apply entry of %s", u.GetKind(), u.GetName(), plugins.FieldManagerFor(templates.Kind))
	}
}

// Every Profile gets the Role; the Profiles of a team also the
// ServiceMonitor, with their namespace and team filled in. A hand edit or
// a deletion is put back through the watch, not the (hour-long) resync, and
// a Profile whose labels no longer select the ServiceMonitor loses it.
func TestServiceMonitorAndRoleInEverySelectedProfile(t *testing.T) {
	startHost(t, everyProfile, time.Hour)
	team := uniqueName("team")
	solo := uniqueName("solo")
	p := testhost.NewProfile(t, env.Client, team, map[string]string{teamLabel: "data"})
	q := testhost.NewProfile(t, env.Client, solo, nil)
	testhost.WaitCondition(t, env.Client, team, condType, plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, solo, condType, plugins.ConditionTrue, "")

	sm := waitFor(t, monitorKind, team, "profile-metrics", nil)
	ours(t, sm, p)
	want := map[string]any{
		"selector":          map[string]any{"matchLabels": map[string]any{"metrics.example.org/scrape": "true"}},
		"namespaceSelector": map[string]any{"matchNames": []any{team}},
		"endpoints":         []any{map[string]any{"port": "metrics", "interval": "30s"}},
	}
	if diff := cmp.Diff(want, sm.Object["spec"]); diff != "" {
		t.Errorf("ServiceMonitor spec (-want +got):\n%s", diff)
	}
	if got := sm.GetLabels()[teamLabel]; got != "data" {
		t.Errorf("ServiceMonitor label %s = %q, want the Profile's, data", teamLabel, got)
	}
	for _, prof := range []*kubeflowv1.Profile{p, q} {
		ours(t, waitFor(t, roleKind, prof.Name, "pod-log-reader", nil), prof)
	}
	if get(t, monitorKind, solo, "profile-metrics") != nil {
		t.Errorf("Profile %s, of no team, got a ServiceMonitor", solo)
	}

	// A hand edit of a field the template sets is put back.
	sm.Object["spec"].(map[string]any)["endpoints"] = []any{map[string]any{"port": "metrics", "interval": "5m"}}
	if err := env.Client.Update(t.Context(), sm); err != nil {
		t.Fatal(err)
	}
	fixed := func(u *unstructured.Unstructured) (bool, string) {
		d := cmp.Diff(want["endpoints"], u.Object["spec"].(map[string]any)["endpoints"])
		return d == "", "endpoints (-want +got):\n" + d
	}
	testhost.Eventually(t, 5*time.Second, func() (bool, string) { return fixed(get(t, monitorKind, team, "profile-metrics")) })

	// A deleted object is made again.
	role := get(t, roleKind, team, "pod-log-reader")
	if err := env.Client.Delete(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 5*time.Second, func() (bool, string) {
		u := get(t, roleKind, team, "pod-log-reader")
		return u != nil && u.GetUID() != role.GetUID(), "the deleted Role is not back"
	})

	// Leaving the selector loses the ServiceMonitor, not the Role.
	role = get(t, roleKind, team, "pod-log-reader")
	testhost.UpdateProfile(t, env.Client, team, func(p *kubeflowv1.Profile) { p.Labels = nil })
	waitGone(t, monitorKind, team, "profile-metrics")
	stays(t, roleKind, team, "pod-log-reader", string(role.GetUID()), role.GetResourceVersion())
}

// A resync with nothing changed sends nothing: not one apply, not one
// status write.
func TestNothingWrittenOnResync(t *testing.T) {
	h := startHost(t, everyProfile, 300*time.Millisecond)
	name := uniqueName("quiet")
	testhost.NewProfile(t, env.Client, name, map[string]string{teamLabel: "data"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	waitFor(t, monitorKind, name, "profile-metrics", nil)
	waitFor(t, roleKind, name, "pod-log-reader", nil)
	if got := h.ResyncWrites(t, 3, templates.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none; events:\n%v", got, testhost.Events(t, env.Client, name))
	}
}

// A template removed from the host's configuration loses its objects when
// the host starts again with the new configuration: a Role through the
// kind another template still makes, a ServiceMonitor through
// retiredKinds. The template that stays keeps its object untouched.
func TestTemplateRemovedFromConfigIsPruned(t *testing.T) {
	name := uniqueName("removed")
	testhost.NewProfile(t, env.Client, name, map[string]string{teamLabel: "data"})
	withViewer := everyProfile + `
- name: viewer
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata: {name: config-viewer}
    rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
`
	var kept *unstructured.Unstructured
	t.Run("before", func(t *testing.T) {
		startHost(t, withViewer, time.Hour)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		waitFor(t, monitorKind, name, "profile-metrics", nil)
		waitFor(t, roleKind, name, "config-viewer", nil)
		kept = waitFor(t, roleKind, name, "pod-log-reader", nil)
	})
	startHost(t, `
retiredKinds: [{apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor}]
templates:
- name: log-reader
  object: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata:
      name: pod-log-reader
    rules:
    - {apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}
`, time.Hour)
	waitGone(t, roleKind, name, "config-viewer")
	waitGone(t, monitorKind, name, "profile-metrics")
	stays(t, roleKind, name, "pod-log-reader", string(kept.GetUID()), kept.GetResourceVersion())
}

// Opting out of a template deletes its object; removing the plugin from
// the Profile revokes it, which deletes every object of ours and nothing
// else.
func TestOptOutAndRevoke(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: templates.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaultsJSON(t, "templates:"+roleTemplate("reader", "\n  optIn: true")+roleTemplate("writer", ""))),
		reconcilers.WithResync(time.Hour),
	}})
	name := uniqueName("revoke")
	testhost.NewProfile(t, env.Client, name, nil, enable("reader"))
	mine := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "mine"}}
	if err := env.Client.Create(t.Context(), mine); err != nil {
		t.Fatal(err)
	}
	waitFor(t, roleKind, name, "reader", nil)
	writer := waitFor(t, roleKind, name, "writer", nil)

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{enable()} })
	waitGone(t, roleKind, name, "reader")
	stays(t, roleKind, name, "writer", string(writer.GetUID()), writer.GetResourceVersion())

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	waitGone(t, roleKind, name, "writer")
	stays(t, roleKind, name, "mine", string(mine.UID), mine.ResourceVersion)
}
