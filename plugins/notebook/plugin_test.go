package notebook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/notebook"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{CRDPaths: []string{filepath.Join("testdata", "poddefault-crd.yaml")}})
}

const condType = "NotebookReady"

func startHost(t *testing.T, defaultsFile string) *testhost.Host {
	t.Helper()
	return testhost.Start(t, env, testhost.Plugin{Def: notebook.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(hostDefaults(t, defaultsFile)),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func listed() kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: notebook.Kind}}
}

func getPodDefault(ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(notebook.GroupVersionKind)
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u) //nolint:forbidigo // no *testing.T in reach
	return u, err
}

func waitPodDefault(t *testing.T, ns, name string, check func(*unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		u, err := getPodDefault(ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = u
		return check(u)
	})
	return got
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		_, err := getPodDefault(ns, name)
		return apierrors.IsNotFound(err), fmt.Sprintf("PodDefault %s/%s still there (%v)", ns, name, err)
	})
}

// asJSON turns a value into what JSON makes of it, so that numbers compare
// equal whether they came from the API server (int64) or a file (float64).
func asJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantSpec is the spec the plugin builds from a testdata file for p.
func wantSpec(t *testing.T, file string, p *kubeflowv1.Profile, name string) any {
	t.Helper()
	pds, err := notebook.Build(hostConfig(t, file), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, pd := range pds {
		if *pd.Name == name {
			return asJSON(t, pd.Spec)
		}
	}
	t.Fatalf("%s builds no PodDefault %s", file, name)
	return nil
}

func specIs(t *testing.T, want any) func(*unstructured.Unstructured) (bool, string) {
	return func(u *unstructured.Unstructured) (bool, string) {
		d := cmp.Diff(want, asJSON(t, u.Object["spec"]))
		return d == "", "spec (-want +got):\n" + d
	}
}

func assertNoMutationOnResync(t *testing.T, h *testhost.Host) {
	t.Helper()
	if got := h.ResyncWrites(t, 3, notebook.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", got)
	}
}

// usersPodDefault creates a PodDefault the way a user would, without our labels.
func usersPodDefault(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"desc":     "my own option",
			"selector": map[string]any{"matchLabels": map[string]any{"mine": "true"}},
			"env":      []any{map[string]any{"name": "MINE", "value": "1"}},
		},
	}}
	u.SetGroupVersionKind(notebook.GroupVersionKind)
	if err := env.Client.Create(t.Context(), u); err != nil {
		t.Fatalf("create PodDefault %s: %v", name, err)
	}
	return u
}

func assertUntouched(t *testing.T, theirs *unstructured.Unstructured) {
	t.Helper()
	got, err := getPodDefault(theirs.GetNamespace(), theirs.GetName())
	if err != nil {
		t.Fatalf("user's PodDefault: %v", err)
	}
	if got.GetResourceVersion() != theirs.GetResourceVersion() || len(got.GetLabels()) != 0 {
		t.Errorf("user's PodDefault %s was modified: resourceVersion %s -> %s, labels %v",
			theirs.GetName(), theirs.GetResourceVersion(), got.GetResourceVersion(), got.GetLabels())
	}
}

func TestProtectedBLifecycle(t *testing.T) {
	h := startHost(t, "statcan.yaml")
	name := uniqueName("pb")
	p := testhost.NewProfile(t, env.Client, name, nil, listed())
	theirs := usersPodDefault(t, name, "my-option")
	want := wantSpec(t, "statcan.yaml", p, "protected-b")

	pd := waitPodDefault(t, name, "protected-b", specIs(t, want))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "1 object in sync")

	t.Run("the option labels protected-b notebooks with their classification", func(t *testing.T) {
		wantSpec := map[string]any{
			"desc":     "Run with Protected B data",
			"selector": map[string]any{"matchLabels": map[string]any{"notebook.statcan.gc.ca/protected-b": "true"}},
			"labels":   map[string]any{"data.statcan.gc.ca/classification": "protected-b"},
		}
		if diff := cmp.Diff(wantSpec, asJSON(t, pd.Object["spec"])); diff != "" {
			t.Errorf("spec (-want +got):\n%s", diff)
		}
	})

	t.Run("ownership", func(t *testing.T) {
		if diff := cmp.Diff(plugins.OwnershipLabels(notebook.Kind, name), pd.GetLabels()); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		refs := pd.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != p.UID || refs[0].Kind != "Profile" {
			t.Errorf("owner references = %+v, want one to Profile %s (%s)", refs, name, p.UID)
		}
	})

	t.Run("resync with nothing changed sends no mutating request", func(t *testing.T) {
		assertNoMutationOnResync(t, h)
	})

	t.Run("a hand edit is put back", func(t *testing.T) {
		u, err := getPodDefault(name, "protected-b")
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(u.Object, "unclassified", "spec", "labels", "data.statcan.gc.ca/classification"); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Update(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		waitPodDefault(t, name, "protected-b", specIs(t, want))
	})

	t.Run("a deleted PodDefault comes back", func(t *testing.T) {
		old, err := getPodDefault(name, "protected-b")
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(t.Context(), old); err != nil {
			t.Fatal(err)
		}
		waitPodDefault(t, name, "protected-b", func(u *unstructured.Unstructured) (bool, string) {
			return u.GetUID() != old.GetUID(), "still the old PodDefault"
		})
	})

	t.Run("revoking deletes ours, keeps the user's and clears the condition", func(t *testing.T) {
		setPlugins(t, name)
		waitGone(t, name, "protected-b")
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var got kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &got); err != nil {
				return false, err.Error()
			}
			c := plugins.FindCondition(got.Status.Conditions, condType)
			return c == nil, fmt.Sprintf("condition still there: %+v", c)
		})
		assertUntouched(t, theirs)
	})
}

// A PodDefault gated by a Profile label, with every field, follows the label
// and is left alone on resync: the API server hands it back as unstructured,
// with integers where the configuration had JSON numbers.
func TestGatedPodDefaultFollowsProfileLabel(t *testing.T) {
	h := startHost(t, "gated.yaml")
	name := uniqueName("gpu")
	testhost.NewProfile(t, env.Client, name, nil, listed())
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "0 objects in sync")
	if _, err := getPodDefault(name, "gpu-scratch"); !apierrors.IsNotFound(err) {
		t.Fatalf("PodDefault for a Profile without the label: %v, want NotFound", err)
	}

	setLabels(t, name, map[string]string{"gpu.example.org/enabled": "true"})
	want := wantSpec(t, "gated.yaml", profile(name, map[string]string{"gpu.example.org/enabled": "true"}), "gpu-scratch")
	waitPodDefault(t, name, "gpu-scratch", specIs(t, want))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "1 object in sync")

	t.Run("resync with nothing changed sends no mutating request", func(t *testing.T) {
		assertNoMutationOnResync(t, h)
	})

	t.Run("an env var added by hand is removed", func(t *testing.T) {
		u, err := getPodDefault(name, "gpu-scratch")
		if err != nil {
			t.Fatal(err)
		}
		env0, _, _ := unstructured.NestedSlice(u.Object, "spec", "env")
		if err := unstructured.SetNestedSlice(u.Object, append(env0, map[string]any{"name": "EXTRA", "value": "x"}), "spec", "env"); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Update(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		waitPodDefault(t, name, "gpu-scratch", specIs(t, want))
	})

	t.Run("removing the label removes the PodDefault", func(t *testing.T) {
		setLabels(t, name, nil)
		waitGone(t, name, "gpu-scratch")
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "0 objects in sync")
	})
}

func TestUsersPodDefaultWithOurNameIsLeftAlone(t *testing.T) {
	startHost(t, "statcan.yaml")
	name := uniqueName("pbc")
	testhost.NewProfile(t, env.Client, name, nil)
	theirs := usersPodDefault(t, name, "protected-b")
	// List the plugin only now, so the user's PodDefault exists first.
	setPlugins(t, name, listed())

	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
		"Conflict: PodDefault "+name+"/protected-b exists and is not managed by plugin notebook")
	assertUntouched(t, theirs)
}

func setPlugins(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	updateProfile(t, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = ps })
}

func setLabels(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	updateProfile(t, name, func(p *kubeflowv1.Profile) { p.Labels = labels })
}

func updateProfile(t *testing.T, name string, change func(*kubeflowv1.Profile)) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, change)
}

// TestRemadePodDefaultComesBackWhole: a tenant with Kubeflow's namespace
// rights deletes our PodDefault and makes it again with our labels and an
// environment variable of its own, which would reach every notebook that
// selects it. The plugin makes it again exactly as desired: the tenant's
// field is gone, not only ours put back.
func TestRemadePodDefaultComesBackWhole(t *testing.T) {
	startHost(t, "statcan.yaml")
	name := uniqueName("remade")
	p := testhost.NewProfile(t, env.Client, name, nil, listed())
	want := wantSpec(t, "statcan.yaml", p, "protected-b")
	old := waitPodDefault(t, name, "protected-b", specIs(t, want))
	tenant := testhost.Tenant(t, env, name)
	forged := &unstructured.Unstructured{Object: map[string]any{"spec": old.DeepCopy().Object["spec"]}}
	forged.SetGroupVersionKind(notebook.GroupVersionKind)
	forged.SetNamespace(name)
	forged.SetName("protected-b")
	forged.SetLabels(old.GetLabels())
	if err := unstructured.SetNestedSlice(forged.Object, []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://tenant.example"}}, "spec", "env"); err != nil {
		t.Fatal(err)
	}
	// The host makes its PodDefault again as soon as it is gone: the
	// tenant deletes it and makes its own until it is first.
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		live, err := getPodDefault(name, "protected-b")
		if err == nil {
			err = tenant.Delete(t.Context(), live)
		}
		if client.IgnoreNotFound(err) != nil {
			return false, fmt.Sprintf("the tenant deletes our PodDefault: %v", err)
		}
		made := forged.DeepCopy()
		if err = tenant.Create(t.Context(), made); err == nil {
			forged = made
		}
		return err == nil, fmt.Sprintf("the tenant makes it again: %v", err)
	})
	got := waitPodDefault(t, name, "protected-b", specIs(t, want))
	if got.GetUID() == forged.GetUID() {
		t.Errorf("the tenant's PodDefault (uid %s) was kept and edited, want it replaced", forged.GetUID())
	}
	for _, mf := range got.GetManagedFields() {
		if mf.Manager != plugins.FieldManagerFor(notebook.Kind) {
			t.Errorf("manager %q still holds fields of the repaired PodDefault", mf.Manager)
		}
	}
	t.Logf("the tenant's PodDefault %s replaced by %s, spec as desired", forged.GetUID(), got.GetUID())
}
