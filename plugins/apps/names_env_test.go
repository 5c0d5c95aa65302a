package apps_test

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/reconcilers"
)

// twoApps declares browser and s3-browser, whose first-release names meet:
// team "t-s3" with browser and team "t" with s3-browser were both "t-s3-browser".
func twoApps(t *testing.T) {
	t.Helper()
	app := func(name string) map[string]any {
		return map[string]any{
			"name":       name,
			"optInLabel": "apps.example.org/" + name,
			"source":     map[string]any{"repoURL": "https://git.example.org/" + name + ".git", "path": "chart", "targetRevision": "v1"},
		}
	}
	b, err := json.Marshal(map[string]any{"apps": []any{app("browser"), app("s3-browser")}})
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, argocdNS)
	testhost.Start(t, env, testhost.Plugin{Def: apps.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(b),
		reconcilers.WithEnabledForAll(nil),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
}

func getApplication(t *testing.T, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apps.ApplicationKind)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: argocdNS, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

func destination(u *unstructured.Unstructured) string {
	ns, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "namespace")
	return ns
}

func TestCollidingPairsGetTheirOwnApplications(t *testing.T) {
	twoApps(t)
	team := "t" + rand.String(5)
	for _, p := range []struct{ name, app string }{{team, "s3-browser"}, {team + "-s3", "browser"}} {
		testhost.NewProfile(t, env.Client, p.name, map[string]string{"apps.example.org/" + p.app: "true"})
	}
	for _, p := range []struct{ name, app string }{{team, "s3-browser"}, {team + "-s3", "browser"}} {
		testhost.WaitCondition(t, env.Client, p.name, condType, plugins.ConditionTrue, "")
		u, ok := getApplication(t, apps.ApplicationName(p.name, p.app))
		if !ok {
			t.Errorf("no Application %s for %s", apps.ApplicationName(p.name, p.app), p.name)
			continue
		}
		if got := destination(u); got != p.name || !plugins.IsOwnedBy(u.GetLabels(), apps.Kind, p.name) {
			t.Errorf("Application %s deploys into %s with labels %v, want %s's", u.GetName(), got, u.GetLabels(), p.name)
		}
	}
}

func TestFirstReleaseApplicationKeepsItsName(t *testing.T) {
	twoApps(t)
	name := "keep-" + rand.String(5)
	legacy := apps.LegacyApplicationName(name, "browser")
	old := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example.org/browser.git", "path": "chart", "targetRevision": "v0"},
		"destination": map[string]any{"server": apps.DefaultServer, "namespace": name},
	}}}
	old.SetGroupVersionKind(apps.ApplicationKind)
	old.SetNamespace(argocdNS)
	old.SetName(legacy)
	old.SetLabels(plugins.OwnershipLabels(apps.Kind, name))
	if err := env.Client.Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	// Another Profile's first-release Application under the name the next
	// Profile would have had then: it is neither kept nor touched.
	other := "keep-" + rand.String(5)
	foreign := old.DeepCopy()
	foreign.SetName(apps.LegacyApplicationName(other, "browser"))
	foreign.SetResourceVersion("")
	labels := plugins.OwnershipLabels(apps.Kind, "someone-else")
	foreign.SetLabels(labels)
	if err := env.Client.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}

	for _, n := range []string{name, other} {
		testhost.NewProfile(t, env.Client, n, map[string]string{"apps.example.org/browser": "true"})
	}
	for _, n := range []string{name, other} {
		testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
	}
	u, ok := getApplication(t, legacy)
	if !ok {
		t.Fatalf("the first release's Application %s is gone", legacy)
	}
	if rev, _, _ := unstructured.NestedString(u.Object, "spec", "source", "targetRevision"); rev != "v1" {
		t.Errorf("the kept Application has targetRevision %q, want v1: it is not applied", rev)
	}
	if _, ok := getApplication(t, apps.ApplicationName(name, "browser")); ok {
		t.Errorf("a second Application %s was made beside the kept one", apps.ApplicationName(name, "browser"))
	}
	if _, ok := getApplication(t, apps.ApplicationName(other, "browser")); !ok {
		t.Errorf("no Application %s for %s", apps.ApplicationName(other, "browser"), other)
	}
	f, ok := getApplication(t, foreign.GetName())
	if !ok || !maps.Equal(f.GetLabels(), labels) {
		t.Errorf("the other Profile's first-release Application was changed or removed")
	}
}
