package rbac_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/rbac"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const condType = "RbacReady"

// hostDefaults is what a platform team might configure: a support group in
// every namespace, the pipelines service account, a Role for pod logs, and
// the roles Profiles may bind themselves.
const hostDefaults = `{
  "bindings": [
    {"name": "support-view", "roleRef": {"kind": "ClusterRole", "name": "view"},
     "subjects": [{"kind": "Group", "name": "support@example.org"}]},
    {"name": "pipeline-runner", "roleRef": {"kind": "ClusterRole", "name": "edit"},
     "subjects": [{"kind": "ServiceAccount", "name": "default-editor"}]}
  ],
  "roles": [
    {"name": "pod-log-reader", "rules": [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get", "list"]}]}
  ],
  "allowedRoles": [
    {"kind": "ClusterRole", "name": "view"},
    {"kind": "ClusterRole", "name": "edit"},
    {"kind": "Role", "name": "pod-log-reader"}
  ]
}`

func startHost(t *testing.T) *testhost.Host {
	t.Helper()
	return testhost.Start(t, env, testhost.Plugin{Def: rbac.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(hostDefaults)),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func rbacPlugin(spec any) kubeflowv1.Plugin {
	raw, _ := json.Marshal(spec)
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: rbac.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
}

func extraBinding(name, clusterRole string, subjects ...map[string]string) map[string]any {
	return map[string]any{
		"extraBindings": []any{map[string]any{
			"name":     name,
			"roleRef":  map[string]string{"kind": "ClusterRole", "name": clusterRole},
			"subjects": subjects,
		}},
	}
}

func getBinding(ns, name string) (*rbacv1.RoleBinding, error) {
	var rb rbacv1.RoleBinding
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rb) //nolint:forbidigo // no *testing.T in reach
	return &rb, err
}

func waitBinding(t *testing.T, ns, name string, check func(*rbacv1.RoleBinding) (bool, string)) *rbacv1.RoleBinding {
	t.Helper()
	var got *rbacv1.RoleBinding
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		rb, err := getBinding(ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = rb
		return check(rb)
	})
	return got
}

func roleIs(kind, name string) func(*rbacv1.RoleBinding) (bool, string) {
	return func(rb *rbacv1.RoleBinding) (bool, string) {
		want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
		return rb.RoleRef == want, fmt.Sprintf("roleRef %+v, want %+v", rb.RoleRef, want)
	}
}

// upstreamBindings creates what the upstream controller and the access
// management API leave in a namespace: namespaceAdmin and a contributor's
// binding with the user and role annotations. None carries our labels.
func upstreamBindings(t *testing.T, ns string) []*rbacv1.RoleBinding {
	t.Helper()
	owner := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.org"}
	bs := []*rbacv1.RoleBinding{{
		ObjectMeta: metav1.ObjectMeta{Name: "namespaceAdmin", Namespace: ns, Annotations: map[string]string{"user": owner.Name, "role": "admin"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-admin"},
		Subjects:   []rbacv1.Subject{owner},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "user-alice-example-org-clusterrole-edit", Namespace: ns, Annotations: map[string]string{"user": alice.Name, "role": "edit"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-edit"},
		Subjects:   []rbacv1.Subject{alice},
	}}
	for _, b := range bs {
		if err := env.Client.Create(t.Context(), b); err != nil {
			t.Fatalf("create %s: %v", b.Name, err)
		}
	}
	return bs
}

// assertUntouched fails when any of bs changed since it was created.
func assertUntouched(t *testing.T, bs []*rbacv1.RoleBinding) {
	t.Helper()
	for _, b := range bs {
		got, err := getBinding(b.Namespace, b.Name)
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
			continue
		}
		if got.ResourceVersion != b.ResourceVersion || got.UID != b.UID || len(got.Labels) != 0 || len(got.OwnerReferences) != 0 {
			t.Errorf("unmanaged binding %s was modified: resourceVersion %s -> %s, uid %s -> %s, labels %v, owners %v",
				b.Name, b.ResourceVersion, got.ResourceVersion, b.UID, got.UID, got.Labels, got.OwnerReferences)
		}
	}
}

func TestBindingsLifecycle(t *testing.T) {
	h := startHost(t)
	name := uniqueName("rb")
	p := testhost.NewProfile(t, env.Client, name, nil, rbacPlugin(extraBinding("team-access", "view",
		map[string]string{"kind": "User", "name": "{{ .Owner }}"},
		map[string]string{"kind": "Group", "name": "team@example.org"},
	)))
	theirs := upstreamBindings(t, name)

	before := waitBinding(t, name, "team-access", roleIs("ClusterRole", "view"))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")

	t.Run("subjects are filled in and sorted", func(t *testing.T) {
		want := []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team@example.org"},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"},
		}
		if diff := cmp.Diff(want, before.Subjects); diff != "" {
			t.Errorf("team-access subjects (-want +got):\n%s", diff)
		}
		runner, err := getBinding(name, "pipeline-runner")
		if err != nil {
			t.Fatal(err)
		}
		wantSA := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: "default-editor"}}
		if diff := cmp.Diff(wantSA, runner.Subjects); diff != "" {
			t.Errorf("pipeline-runner subjects (-want +got):\n%s", diff)
		}
	})

	t.Run("ownership", func(t *testing.T) {
		var role rbacv1.Role
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "pod-log-reader"}, &role); err != nil {
			t.Fatal(err)
		}
		for _, o := range []client.Object{before, &role} {
			if diff := cmp.Diff(plugins.OwnershipLabels(rbac.Kind, name), o.GetLabels()); diff != "" {
				t.Errorf("%s labels (-want +got):\n%s", o.GetName(), diff)
			}
			refs := o.GetOwnerReferences()
			if len(refs) != 1 || refs[0].UID != p.UID {
				t.Errorf("%s owner references = %+v, want one to Profile %s", o.GetName(), refs, p.UID)
			}
		}
	})

	t.Run("resync with nothing changed sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, rbac.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("a changed role replaces the binding", func(t *testing.T) {
		setPlugins(t, name, rbacPlugin(extraBinding("team-access", "edit",
			map[string]string{"kind": "User", "name": "{{ .Owner }}"},
			map[string]string{"kind": "Group", "name": "team@example.org"},
		)))
		after := waitBinding(t, name, "team-access", roleIs("ClusterRole", "edit"))
		if after.UID == before.UID {
			t.Errorf("binding kept its UID %s: it was not replaced", after.UID)
		}
		if diff := cmp.Diff(before.Subjects, after.Subjects); diff != "" {
			t.Errorf("subjects changed with the role (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(plugins.OwnershipLabels(rbac.Kind, name), after.Labels); diff != "" {
			t.Errorf("labels of the new binding (-want +got):\n%s", diff)
		}
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")
		// The cache may still show the old binding on the next pass; that
		// must not turn into a failed pass.
		if warnings := warningEvents(t, name); len(warnings) != 0 {
			t.Errorf("warning events after the replacement: %v", warnings)
		}
	})

	t.Run("a hand edit is put back", func(t *testing.T) {
		rb, err := getBinding(name, "support-view")
		if err != nil {
			t.Fatal(err)
		}
		want := rb.Subjects
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory@example.org"})
		if err := env.Client.Update(t.Context(), rb); err != nil {
			t.Fatal(err)
		}
		waitBinding(t, name, "support-view", func(rb *rbacv1.RoleBinding) (bool, string) {
			d := cmp.Diff(want, rb.Subjects)
			return d == "", "subjects (-want +got):\n" + d
		})
	})

	t.Run("a deleted Role comes back", func(t *testing.T) {
		var role rbacv1.Role
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "pod-log-reader"}, &role); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(t.Context(), &role); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var got rbacv1.Role
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "pod-log-reader"}, &got)
			return err == nil && got.UID != role.UID, fmt.Sprintf("role not recreated (%v)", err)
		})
	})

	t.Run("a changed subject is updated in place", func(t *testing.T) {
		old, _ := getBinding(name, "team-access")
		setPlugins(t, name, rbacPlugin(extraBinding("team-access", "edit",
			map[string]string{"kind": "Group", "name": "team@example.org"},
		)))
		got := waitBinding(t, name, "team-access", func(rb *rbacv1.RoleBinding) (bool, string) {
			return len(rb.Subjects) == 1, fmt.Sprintf("subjects %v", rb.Subjects)
		})
		if got.UID != old.UID {
			t.Errorf("binding was recreated (uid %s -> %s) for a subject change", old.UID, got.UID)
		}
	})

	assertUntouched(t, theirs)

	t.Run("a dropped extra binding is deleted, the host's stay", func(t *testing.T) {
		setPlugins(t, name, rbacPlugin(map[string]any{}))
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getBinding(name, "team-access")
			return apierrors.IsNotFound(err), fmt.Sprintf("team-access still there (%v)", err)
		})
		if _, err := getBinding(name, "support-view"); err != nil {
			t.Errorf("support-view: %v", err)
		}
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "3 objects in sync")
	})

	t.Run("revoking removes ours and keeps theirs", func(t *testing.T) {
		setPlugins(t, name)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var rbs rbacv1.RoleBindingList
			var roles rbacv1.RoleList
			sel := client.MatchingLabels(plugins.OwnershipLabels(rbac.Kind, name))
			if err := env.Client.List(t.Context(), &rbs, client.InNamespace(name), sel); err != nil {
				return false, err.Error()
			}
			if err := env.Client.List(t.Context(), &roles, client.InNamespace(name), sel); err != nil {
				return false, err.Error()
			}
			return len(rbs.Items)+len(roles.Items) == 0, fmt.Sprintf("%d bindings and %d roles of ours left", len(rbs.Items), len(roles.Items))
		})
		assertUntouched(t, theirs)
	})
}

// A binding of ours whose name another binding already holds is reported and
// left alone; the Profile's other objects are still written.
func TestUnmanagedBindingWithOurNameIsLeftAlone(t *testing.T) {
	startHost(t)
	name := uniqueName("rbc")
	testhost.NewProfile(t, env.Client, name, nil)
	theirs := upstreamBindings(t, name)
	contributor := theirs[1].Name
	// List the plugin only now, so the contributor binding exists first.
	setPlugins(t, name, rbacPlugin(extraBinding(contributor, "edit", map[string]string{"kind": "User", "name": "alice@example.org"})))

	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
		"Conflict: RoleBinding "+name+"/"+contributor+" exists and is not managed by plugin rbac")
	waitBinding(t, name, "support-view", roleIs("ClusterRole", "view"))
	assertUntouched(t, theirs)
}

// warningEvents returns the notes of the Warning events about Profile name.
func warningEvents(t *testing.T, name string) []string {
	t.Helper()
	var evs eventsv1.EventList
	if err := env.Client.List(t.Context(), &evs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

func setPlugins(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = ps })
}
