package main

import (
	"testing"

	"github.com/profilekit/profilekit/examples/custom-plugin/welcome"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// TestWelcomeSurvivesEveryPerturbation gives the welcome plugin the proof
// every built-in plugin has: the host stops after each of its writes, the
// next pass decides from a stale cache or one that missed an event, and
// two changes of the Profile come as one; after each, the plugin ends
// where a run without perturbation ends, and never touches what it does
// not own. A welcome message is made, rewritten with a contact, the plugin
// removed, added again, and the Profile deleted.
func TestWelcomeSurvivesEveryPerturbation(t *testing.T) {
	sc := plugintest.Scenario{Def: welcome.Definition(), Steps: []plugintest.Step{
		{Name: "create"},
		{Name: "a message of its own", Spec: map[string]any{"message": "Hello {{ .Owner }}", "contact": "support@example.org"}},
		{Name: "remove", Remove: true},
		{Name: "add again"},
		{Name: "delete the Profile", Delete: true},
	}}
	plugintest.Harness{Client: env.Client}.Survives(t, func(*testing.T) plugintest.Scenario { return sc }, plugintest.ClusterPatterns...)
}
