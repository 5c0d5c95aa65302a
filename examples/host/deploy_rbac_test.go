package main

// This file holds the check that carries the proof of the chart's RBAC
// over to the kustomize overlays: the host's tests run under the chart's
// roles (rbac_chart_test.go), and every rule the chart grants is needed by
// one of them or kept with a reason (rbac_unused_test.go). An overlay that
// grants the host exactly what the chart grants for the same configuration
// is proven by the same runs; a rule only the overlay grants is one no test
// needed, and a rule only the chart grants is a Forbidden waiting for the
// overlay's users.

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hostGrants returns what the roles in objs bound to the host's
// ServiceAccount grant it, one line per verb, resource and scope, sorted:
// cluster-wide, in the host's namespace, or in another namespace by its
// name. The roles' names are left out, as the chart and kustomize name
// them each their own way.
func hostGrants(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, hb := range hostBindings(t, objs) {
		u, ref := hb.binding, hb.ref
		ns := u.GetNamespace()
		scope := "cluster-wide"
		switch {
		case ns == hostNamespace:
			scope = "in the host's namespace"
		case ns != "":
			scope = "in namespace " + ns
		}
		for _, g := range grantsOf("", ns, boundRules(t, objs, ref, ns)) {
			out = append(out, scope+" "+strings.TrimPrefix(g.key(), ": "))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkSameRBACAsChart checks that an overlay's objects grant the host
// what the chart grants it for the configuration file source.
func checkSameRBACAsChart(t *testing.T, objs []*unstructured.Unstructured, source string) {
	t.Helper()
	chart := hostGrants(t, helmTemplate(t, "--set-file", "config="+source))
	overlay := hostGrants(t, objs)
	if len(chart) == 0 {
		t.Fatalf("the chart grants the host nothing for %s", source)
	}
	if diff := cmp.Diff(chart, overlay); diff != "" {
		t.Errorf("the overlay's RBAC for the host differs from the chart's for %s, whose rules the host's tests prove (-chart +overlay):\n%s", source, diff)
	}
}
