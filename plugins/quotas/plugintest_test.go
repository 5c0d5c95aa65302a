package quotas_test

import (
	"testing"

	"github.com/profilekit/profilekit/plugins/plugintest"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// TestQuotasSurviveEveryPerturbation makes a quota, tightens it, removes
// the plugin, adds it again and deletes the Profile, under every pattern
// of the API server. The quota is held by both the first and the second
// step, so it may change and never be absent, not even for one write.
func TestQuotasSurviveEveryPerturbation(t *testing.T) {
	hard := func(h map[string]string) map[string]any { return map[string]any{"hard": h} }
	create := hard(map[string]string{"limits.cpu": "4", "requests.memory": "8Gi"})
	sc := plugintest.Scenario{Def: quotas.Definition(), Steps: []plugintest.Step{
		{Name: "create", Spec: create},
		{Name: "change", Spec: hard(map[string]string{"limits.cpu": "8"})},
		{Name: "remove", Remove: true},
		{Name: "add again", Spec: create},
		{Name: "delete the Profile", Delete: true},
	}}
	plugintest.Harness{Client: env.Client}.Survives(t, func(*testing.T) plugintest.Scenario { return sc }, plugintest.ClusterPatterns...)
}
