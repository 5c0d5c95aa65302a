package page

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
)

// App is one Argo CD Application the apps plugin keeps for the namespace,
// and what Argo CD says of it.
type App struct {
	Name string
	// Source is where Argo CD takes the app from: the repository and the
	// chart or path in it.
	Source string
	// Sync is Synced, OutOfSync or Unknown; Health is Healthy,
	// Progressing, Degraded, Suspended, Missing or Unknown; both are
	// "Unknown" until Argo CD has looked at the app.
	Sync, Health string
	// Message is Argo CD's word on the app's health or its last operation
	// when the app is not healthy.
	Message string
}

// Healthy reports whether Argo CD finds the app healthy and in sync.
func (a App) Healthy() bool { return a.Health == "Healthy" && a.Sync == "Synced" }

// Failing reports whether Argo CD finds the app broken (Degraded) or gone
// (Missing); an app that is still rolling out or syncing is neither
// healthy nor failing.
func (a App) Failing() bool { return a.Health == "Degraded" || a.Health == "Missing" }

// apps returns the Applications in ns (the Argo CD namespace) that the
// apps plugin keeps for Profile name, whose destination is its namespace.
func (r reader) apps(ctx context.Context, ns, name string) ([]App, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(apps.ApplicationKind.GroupVersion().WithKind(apps.ApplicationKind.Kind + "List"))
	sel := client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelProfile: name}
	if err := r.List(ctx, l, client.InNamespace(ns), sel); err != nil {
		return nil, fmt.Errorf("list the Applications of %s in %s: %w", name, ns, err)
	}
	var out []App
	for _, u := range l.Items {
		if dest, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "namespace"); dest != name {
			continue
		}
		out = append(out, app(&u))
	}
	slices.SortFunc(out, func(a, b App) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// app reads what the page shows of Application u.
func app(u *unstructured.Unstructured) App {
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(u.Object, path...)
		return s
	}
	a := App{Name: u.GetName(), Sync: str("status", "sync", "status"), Health: str("status", "health", "status")}
	a.Source = str("spec", "source", "repoURL")
	for _, in := range []string{str("spec", "source", "chart"), str("spec", "source", "path")} {
		if in != "" {
			a.Source += " · " + in
		}
	}
	if a.Sync == "" {
		a.Sync = "Unknown"
	}
	if a.Health == "" {
		a.Health = "Unknown"
	}
	if !a.Healthy() {
		a.Message = str("status", "health", "message")
		if a.Message == "" {
			a.Message = str("status", "operationState", "message")
		}
	}
	return a
}
