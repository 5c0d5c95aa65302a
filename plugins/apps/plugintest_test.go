package apps_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

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
// and its route and policy with it, another written), lets go, takes the
// S3 browser again, and is deleted. Argo CD
// does not run here: a deleted Application stays with its resources
// finalizer, being deleted, as it does while Argo CD removes what it
// deployed, and the plugin waits for it without writing again; Between
// does what Argo CD does once that is done. The plugin
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
			{Name: "add again", Spec: map[string]any{"enable": []string{"s3-browser"}}},
			{Name: "delete the Profile", Delete: true},
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
		Between: func(ctx context.Context, c client.Client, namespace string) error {
			return finishDeletionsOf(ctx, c, namespace)
		},
	}
}

// finishDeletions drops the resources finalizer of the runs' deleted
// Applications, as Argo CD does once it has removed what they deployed.
func finishDeletions(t *testing.T, runs []string) {
	ctx := context.Background() //nolint:forbidigo // cleanups run after t.Context is canceled
	for _, profile := range runs {
		if err := finishDeletionsOf(ctx, env.Client, profile); err != nil {
			t.Errorf("finish the deletions of %s's Applications: %v", profile, err)
		}
	}
}

// finishDeletionsOf does for profile's deleted Applications what Argo CD
// does once it has removed what they deployed: it drops their resources
// finalizer.
func finishDeletionsOf(ctx context.Context, c client.Client, profile string) error {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(apps.ApplicationKind.GroupVersion().WithKind("ApplicationList"))
	if err := c.List(ctx, &list, client.InNamespace(argocdNS), client.MatchingLabels(plugins.OwnershipLabels(apps.Kind, profile))); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetDeletionTimestamp() == nil {
			continue
		}
		u.SetFinalizers(nil)
		errs = append(errs, client.IgnoreNotFound(c.Update(ctx, u)))
	}
	return errors.Join(errs...)
}

// TestAppsSurviveEveryPerturbation runs every crash, stale and unobserved
// plan of the scenario, from a new Profile and from one the first release
// served.
func TestAppsSurviveEveryPerturbation(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	t.Run("new", func(t *testing.T) {
		h.Survives(t, func(t *testing.T) plugintest.Scenario { return appsScenario(t, false) }, plugintest.ClusterPatterns...)
	})
	t.Run("after an upgrade", func(t *testing.T) {
		h.Survives(t, func(t *testing.T) plugintest.Scenario { return appsScenario(t, true) }, plugintest.ClusterPatterns...)
	})
}
