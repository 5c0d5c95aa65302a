package limitrange_test

import (
	"testing"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// TestLimitRangeSurvivesEveryPerturbation makes a limit range, changes its
// maximum and adds a default, removes the plugin, adds it again and
// deletes the Profile, under every pattern of the API server. The limit
// range is held by both the first and the second step, so it may change
// and never be absent, not even for one write.
func TestLimitRangeSurvivesEveryPerturbation(t *testing.T) {
	create := map[string]any{"container": map[string]any{"max": map[string]string{"cpu": "2"}}}
	sc := plugintest.Scenario{Def: limitrange.Definition(), Steps: []plugintest.Step{
		{Name: "create", Spec: create},
		{Name: "change", Spec: map[string]any{"container": map[string]any{"max": map[string]string{"cpu": "4"}, "default": map[string]string{"cpu": "1"}}}},
		{Name: "remove", Remove: true},
		{Name: "add again", Spec: create},
		{Name: "delete the Profile", Delete: true},
	}}
	plugintest.Harness{Client: env.Client}.Survives(t, func(*testing.T) plugintest.Scenario { return sc }, plugintest.ClusterPatterns...)
}
