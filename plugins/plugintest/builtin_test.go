package plugintest_test

import (
	"encoding/json"
	"testing"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/egress"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/plugintest"
	"github.com/profilekit/profilekit/plugins/rbac"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{Istio: true}) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lifecycle ends sc, whose last step removes the plugin, with the plugin
// added again as at first and the Profile deleted.
func lifecycle(sc plugintest.Scenario) plugintest.Scenario {
	sc.Steps = append(sc.Steps, plugintest.Step{Name: "add again", Spec: sc.Steps[0].Spec}, plugintest.Step{Name: "delete the Profile", Delete: true})
	return sc
}

// scenarios are the object-writing plugins, each made, changed in a way
// that rewrites, adds or deletes objects, removed, added again and
// deleted with its Profile. quotas and limitrange keep theirs in their own
// packages, whose tests make mutation-source runs.
func scenarios(t *testing.T) []plugintest.Scenario {
	scs := []plugintest.Scenario{
		{Def: rbac.Definition(), Defaults: mustJSON(t, map[string]any{
			"bindings": []any{map[string]any{"name": "support-view", "roleRef": map[string]string{"kind": "ClusterRole", "name": "view"},
				"subjects": []any{map[string]string{"kind": "Group", "name": "support@example.org"}}}},
			"roles":        []any{map[string]any{"name": "pod-log-reader", "rules": []any{map[string]any{"apiGroups": []string{""}, "resources": []string{"pods/log"}, "verbs": []string{"get"}}}}},
			"allowedRoles": []any{map[string]string{"kind": "ClusterRole", "name": "view"}, map[string]string{"kind": "ClusterRole", "name": "edit"}},
		}), Steps: []plugintest.Step{
			{Name: "create"},
			{Name: "add a binding", Spec: map[string]any{"extraBindings": []any{map[string]any{"name": "team", "roleRef": map[string]string{"kind": "ClusterRole", "name": "view"},
				"subjects": []any{map[string]string{"kind": "User", "name": "bob@example.org"}}}}}},
			{Name: "change its role", Spec: map[string]any{"extraBindings": []any{map[string]any{"name": "team", "roleRef": map[string]string{"kind": "ClusterRole", "name": "edit"},
				"subjects": []any{map[string]string{"kind": "User", "name": "bob@example.org"}}}}}},
			{Name: "remove", Remove: true},
		}},
		{Def: network.Definition(), Defaults: mustJSON(t, map[string]any{
			"policies": []any{
				map[string]any{"name": "deny-ingress", "podSelector": map[string]any{}, "policyTypes": []string{"Ingress"}},
				map[string]any{"name": "allow-monitoring", "gate": map[string]string{"spec": "monitoring"}, "podSelector": map[string]any{}, "policyTypes": []string{"Ingress"},
					"ingress": []any{map[string]any{"from": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]string{"name": "monitoring"}}}}}}},
			},
		}), Steps: []plugintest.Step{
			{Name: "create"},
			{Name: "open a gate", Spec: map[string]any{"gates": map[string]any{"monitoring": true}}},
			{Name: "close it", Spec: map[string]any{"gates": map[string]any{"monitoring": false}}},
			{Name: "remove", Remove: true},
		}},
		{Def: core.Definition(), MakesNamespace: true, Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{}},
			{Name: "remove", Remove: true},
		}},
		{Def: egress.Definition(), Defaults: []byte(`{"allowedHosts":["*.example.com"]}`), Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{"enabled": true, "hosts": []any{map[string]any{"host": "storage.example.com", "port": 8443}}}},
			{Name: "another host", Spec: map[string]any{"enabled": true, "hosts": []any{map[string]any{"host": "storage.example.com", "port": 8443}, map[string]any{"host": "api.example.com"}}}},
			{Name: "off", Spec: map[string]any{"enabled": false}},
			{Name: "remove", Remove: true},
		}},
		{Def: expose.Definition(), Defaults: []byte(`{"hosts":["kubeflow.example.org"]}`), Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{"apps": []any{map[string]any{"name": "docs", "service": "docs", "port": 8080}}}},
			{Name: "another app", Spec: map[string]any{"apps": []any{map[string]any{"name": "docs", "service": "docs", "port": 8080}, map[string]any{"name": "rstudio", "service": "rstudio", "port": 8787}}}},
			{Name: "the first goes", Spec: map[string]any{"apps": []any{map[string]any{"name": "rstudio", "service": "rstudio", "port": 8787}}}},
			{Name: "remove", Remove: true},
		}},
	}
	for i := range scs {
		scs[i] = lifecycle(scs[i])
	}
	return scs
}

// TestBuiltinPluginsSurviveEveryPerturbation runs every plan of the
// patterns of the API server for each object-writing plugin.
func TestBuiltinPluginsSurviveEveryPerturbation(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, sc := range scenarios(t) {
		t.Run(sc.Def.Kind(), func(t *testing.T) {
			h.Survives(t, func(*testing.T) plugintest.Scenario { return sc }, plugintest.ClusterPatterns...)
		})
	}
}
