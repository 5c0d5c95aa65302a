package namespacemeta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// namespacemetaScenario is a Profile that marks its namespace, changes a
// value, drops a key, lets go, marks it again and is deleted. Setup makes
// the namespace the owner's, as the core plugin or the upstream controller
// would, with a label and an annotation set by hand; Observe reads every
// label and annotation of the namespace, and fails when the hand-set ones
// are gone, so that a key left behind, lost or set twice is a difference
// from the run without perturbation, and a key that is not the plugin's
// removed fails even that run.
func namespacemetaScenario(t *testing.T) plugintest.Scenario {
	defaults, err := json.Marshal(map[string]any{"allow": hostAllow})
	if err != nil {
		t.Fatal(err)
	}
	marks := func(enforce string, costCentre bool) map[string]any {
		labels := map[string]string{"istio.io/rev": "canary", "pod-security.kubernetes.io/enforce": enforce}
		if costCentre {
			labels["example.org/cost-centre"] = "cc-1234"
		}
		return map[string]any{"labels": labels, "annotations": map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=team-a"}}
	}
	const handLabel, handAnnotation = "team.example.org/note", "team.example.org/contact"
	return plugintest.Scenario{
		Def:      namespacemeta.Definition(),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "set labels", Spec: marks("baseline", true)},
			{Name: "change one", Spec: marks("restricted", true)},
			{Name: "remove a key", Spec: marks("restricted", false)},
			{Name: "remove the plugin", Remove: true},
			{Name: "add again", Spec: marks("baseline", true)},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"by-hand"},"annotations":{%q:%q,%q:"alice"}}}`, handLabel, core.AnnotationOwner, owner, handAnnotation)
			ns := &corev1.Namespace{}
			ns.Name = namespace
			return c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-edit"))
		},
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			var ns corev1.Namespace
			if err := env.Client.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
				return nil, err
			}
			if ns.Labels[handLabel] != "by-hand" || ns.Annotations[handAnnotation] != "alice" || ns.Annotations[core.AnnotationOwner] != owner {
				return nil, fmt.Errorf("namespace %s lost what others set: labels %v, annotations %v", namespace, ns.Labels, ns.Annotations)
			}
			out := map[string]string{}
			for k, v := range ns.Labels {
				out["label "+k] = v
			}
			for k, v := range ns.Annotations {
				out["annotation "+k] = v
			}
			for _, k := range ourKeys(t, &ns) {
				out["held by the plugin: "+k] = "yes"
			}
			return out, nil
		},
		Touches: []string{"Namespace /<profile>"},
		// The namespace outlives the Profile here (the harness made it, with
		// no owner reference); in a cluster it goes with the Profile.
		Retained: []string{"label ", "annotation ", "held by the plugin"},
	}
}

func TestNamespacemetaSurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, namespacemetaScenario, plugintest.ClusterPatterns...)
}
