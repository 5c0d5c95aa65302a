package namespacemeta_test

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
	"github.com/profilekit/profilekit/reconcilers"
)

// startHost runs the plugin under the standalone reconciler with the host's
// defaults and a short resync.
func startHost(t *testing.T, defaults []byte) *testhost.Host {
	t.Helper()
	return testhost.Start(t, env, testhost.Plugin{Def: namespacemeta.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaults),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
}

// newProfile makes the Profile name, of owner, listing ps; the namespace is
// the test's to make.
func newProfile(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner}, Plugins: ps},
	}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), p) })
}

// waitLabels waits until the namespace's labels are want.
func waitLabels(t *testing.T, name string, want map[string]string) {
	t.Helper()
	testhost.Eventually(t, 5*time.Second, func() (bool, string) {
		d := cmp.Diff(want, namespaceMeta(t, name).Labels)
		return d == "", "labels (-want +got):\n" + d
	})
}

// editNamespace changes the namespace as a person with kubectl edit would.
func editNamespace(t *testing.T, name string, edit func(*corev1.Namespace)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ns corev1.Namespace
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
			return err
		}
		edit(&ns)
		return env.Client.Update(t.Context(), &ns, client.FieldOwner("kubectl-edit"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Under a host, for a namespace the upstream controller made (read from the
// API server) and one the core plugin made (read from the host's cache of
// profilekit's objects, with no request): the Profile's keys land, a hand
// edit of one is put back within seconds, a key the Profile drops goes, a
// resync writes nothing, and when the Profile stops listing the plugin its
// keys go and the hand-set ones stay.
func TestHostKeepsTheNamespaceMarked(t *testing.T) {
	for _, tc := range []struct {
		reason string
		byCore bool
	}{
		{"made by the upstream controller", false},
		{"made by the core plugin", true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			h := startHost(t, hostDefaults(t))
			name := "host-" + rand.String(5)
			labels := map[string]string{"team.example.org/note": "by-hand"}
			if tc.byCore {
				maps.Copy(labels, plugins.OwnershipLabels(core.Kind, name))
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{core.AnnotationOwner: owner}}}
			if err := env.Client.Create(t.Context(), ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
			before := namespaceMeta(t, name).Labels

			newProfile(t, name, spec(t, map[string]string{"istio.io/rev": "canary", "example.org/cost-centre": "cc-1"}, nil))
			waitLabels(t, name, with(before, "istio.io/rev", "canary", "example.org/cost-centre", "cc-1"))
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

			editNamespace(t, name, func(ns *corev1.Namespace) { ns.Labels["istio.io/rev"] = "stable" })
			waitLabels(t, name, with(before, "istio.io/rev", "canary", "example.org/cost-centre", "cc-1"))

			testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
				p.Spec.Plugins = []kubeflowv1.Plugin{spec(t, map[string]string{"istio.io/rev": "canary"}, nil)}
			})
			waitLabels(t, name, with(before, "istio.io/rev", "canary"))

			if writes := h.ResyncWrites(t, 3, namespacemeta.Kind); len(writes) != 0 {
				t.Errorf("resyncs with nothing changed sent %v", writes)
			}
			if reads := h.Counter.Count("GET", "/api/v1/namespaces/"+name); tc.byCore && reads != 0 {
				t.Errorf("resyncs read the core plugin's namespace %d times from the API server, want none", reads)
			}

			testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
			waitLabels(t, name, before)
			if got := namespaceMeta(t, name).Ours; len(got) != 0 {
				t.Errorf("the plugin still holds %v", got)
			}
		})
	}
}
