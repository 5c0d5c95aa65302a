package apps_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// rstudio is a second app, deployed with Kustomize, with its own route and
// network policy.
var rstudio = map[string]any{
	"name": "rstudio",
	"source": map[string]any{
		"repoURL":        "https://git.example.org/platform/rstudio.git",
		"path":           "overlays/profile",
		"targetRevision": "v2.3.1",
		"kustomize":      map[string]any{"namePrefix": "{{ .Namespace }}-", "commonLabels": map[string]any{"profile": "{{ .Profile }}"}},
	},
	"route": map[string]any{"service": "rstudio", "port": 8787, "rewriteToRoot": true},
	"networkPolicies": []any{map[string]any{
		"name":        "rstudio",
		"podSelector": map[string]any{"matchLabels": map[string]any{"app": "rstudio"}},
		"policyTypes": []any{"Ingress"},
		"ingress": []any{map[string]any{"from": []any{map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "istio-system"}},
		}}}},
	}},
}

// appsScenario is the plugin with two apps declared: a Profile enables the
// S3 browser (its Application in the Argo CD namespace, its route and
// policy in the Profile's), swaps it for RStudio (one Application deleted
// and its route and policy with it, another written), and lets go. Argo CD
// does not run here: a deleted Application stays with its resources
// finalizer, being deleted, as it does while Argo CD removes what it
// deployed, and the plugin waits for it without writing again. The plugin
// calls no outside system, so crashes, stale and blind views are its
// plans; a host's cache of the Argo CD namespace, which the views hold,
// shows the first release's Application.
// With upgrade, each run starts with the S3 browser's Application as the
// first release named and wrote it, which the plugin must keep under that
// name, bring up to date, and delete when the Profile swaps the app.
func appsScenario(t *testing.T, upgrade bool) plugintest.Scenario {
	ensureNamespace(t, argocdNS)
	cfg := maps.Clone(s3Browser)
	cfg["apps"] = append(slices.Clone(s3Browser["apps"].([]any)), rstudio)
	defaults, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	t.Cleanup(func() { finishDeletions(t, runs) })
	return plugintest.Scenario{
		Def:      apps.Definition(),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "enable the S3 browser", Spec: map[string]any{"enable": []string{"s3-browser"}}},
			{Name: "swap it for RStudio", Spec: map[string]any{"enable": []string{"rstudio"}}},
			{Name: "remove", Remove: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			runs = append(runs, namespace)
			if !upgrade {
				return nil
			}
			old := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
				"project":     "default",
				"source":      map[string]any{"repoURL": "https://charts.example.org/s3-browser.git", "path": "chart", "targetRevision": "v1.3.0"},
				"destination": map[string]any{"server": apps.DefaultServer, "namespace": namespace},
			}}}
			old.SetGroupVersionKind(apps.ApplicationKind)
			old.SetNamespace(argocdNS)
			old.SetName(apps.LegacyApplicationName(namespace, "s3-browser"))
			old.SetLabels(plugins.OwnershipLabels(apps.Kind, namespace))
			old.SetFinalizers([]string{apps.ResourcesFinalizer})
			return c.Create(ctx, old)
		},
	}
}

// finishDeletions drops the resources finalizer of the runs' deleted
// Applications, as Argo CD does once it has removed what they deployed.
func finishDeletions(t *testing.T, runs []string) {
	ctx := context.Background() //nolint:forbidigo // cleanups run after t.Context is canceled
	for _, profile := range runs {
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(apps.ApplicationKind.GroupVersion().WithKind("ApplicationList"))
		if err := env.Client.List(ctx, &list, client.InNamespace(argocdNS), client.MatchingLabels(plugins.OwnershipLabels(apps.Kind, profile))); err != nil {
			t.Errorf("list the Applications of %s: %v", profile, err)
			continue
		}
		for i := range list.Items {
			u := &list.Items[i]
			if u.GetDeletionTimestamp() == nil {
				continue
			}
			u.SetFinalizers(nil)
			if err := env.Client.Update(ctx, u); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("finish the deletion of Application %s: %v", u.GetName(), err)
			}
		}
	}
}

// TestAppsSurviveEveryPerturbation runs every crash, stale and unobserved
// plan of the scenario, from a new Profile and from one the first release
// served.
func TestAppsSurviveEveryPerturbation(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, upgrade := range []bool{false, true} {
		for _, pattern := range []struct {
			name string
			run  func(plugintest.T, plugintest.Scenario) plugintest.Plans
		}{{"crash", h.CrashAfterEveryWrite}, {"stale", h.StaleAtEveryWrite}, {"unobserved", h.UnobservedAtEveryWrite}} {
			name := pattern.name
			if upgrade {
				name += " after an upgrade"
			}
			t.Run(name, func(t *testing.T) {
				plans := pattern.run(t, appsScenario(t, upgrade))
				t.Logf("%s: %d %s plans, %d failed", apps.Kind, plans.Run, name, plans.Failed)
				if plans.Run+plans.Skipped == 0 {
					t.Error("no plan ran")
				}
			})
		}
	}
}
