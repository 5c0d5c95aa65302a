package notebook_test

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins/notebook"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// scenarioDefaults offer three PodDefaults: two for every Profile and one
// for GPU Profiles only, which the scenario's Profile (no labels) does not
// get.
const scenarioDefaults = `
podDefaults:
- name: protected-b
  desc: Run with Protected B data
  selector: {matchLabels: {notebook.statcan.gc.ca/protected-b: "true"}}
  labels: {data.statcan.gc.ca/classification: protected-b}
- name: pip-mirror
  desc: Install packages from the internal mirror
  selector: {matchLabels: {notebook.example.org/pip-mirror: "true"}}
  env: [{name: PIP_INDEX_URL, value: "https://pypi.example.org/simple"}]
- name: gpu-scratch
  desc: GPU node with a scratch volume
  profileSelector: {matchLabels: {gpu.example.org/enabled: "true"}}
  selector: {matchLabels: {notebook.example.org/gpu: "true"}}
  volumes: [{name: scratch, emptyDir: {sizeLimit: 10Gi}}]
  volumeMounts: [{name: scratch, mountPath: /scratch}]
`

// userPodDefault is a PodDefault the namespace's users made themselves.
const userPodDefault = "my-conda-env"

// scenario is the notebook plugin for one Profile: its PodDefaults made
// beside one its users made; the Profile labelled for GPUs gets the GPU
// PodDefault, and loses it with the label; the host stops offering the
// pip mirror; the plugin is removed, added again, and the Profile
// deleted. Observe shows the users' PodDefault as it was made: the plugin
// must neither adopt nor delete it, whatever a crash or a stale or blind
// view makes it see.
func scenario(t *testing.T) plugintest.Scenario {
	defaults, err := yaml.YAMLToJSON([]byte(scenarioDefaults))
	if err != nil {
		t.Fatal(err)
	}
	return plugintest.Scenario{
		Def:      notebook.Definition(),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "create"},
			{Name: "labelled for GPUs", Labels: map[string]string{"gpu.example.org/enabled": "true"}},
			{Name: "label taken away", Labels: map[string]string{}},
			{Name: "the host drops the pip mirror", Defaults: withoutPipMirror},
			{Name: "remove", Remove: true},
			{Name: "add again"},
			{Name: "delete the Profile", Delete: true},
		},
		Retained: []string{"users' PodDefault"}, // not the plugin's to take
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			pd := &unstructured.Unstructured{}
			pd.SetGroupVersionKind(notebook.GroupVersionKind)
			pd.SetNamespace(namespace)
			pd.SetName(userPodDefault)
			pd.Object["spec"] = map[string]any{
				"desc":     "My conda environment",
				"selector": map[string]any{"matchLabels": map[string]any{"conda": "mine"}},
			}
			return c.Create(ctx, pd)
		},
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			pd, err := readPodDefault(ctx, namespace, userPodDefault)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(map[string]any{"labels": pd.GetLabels(), "spec": pd.Object["spec"]})
			return map[string]string{"users' PodDefault": string(b)}, err
		},
	}
}

// withoutPipMirror are the scenario's defaults but for the pip mirror.
var withoutPipMirror = []byte(`{"podDefaults":[
 {"name":"protected-b","desc":"Run with Protected B data","selector":{"matchLabels":{"notebook.statcan.gc.ca/protected-b":"true"}},"labels":{"data.statcan.gc.ca/classification":"protected-b"}},
 {"name":"gpu-scratch","desc":"GPU node with a scratch volume","profileSelector":{"matchLabels":{"gpu.example.org/enabled":"true"}},
  "selector":{"matchLabels":{"notebook.example.org/gpu":"true"}},"volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"10Gi"}}],"volumeMounts":[{"name":"scratch","mountPath":"/scratch"}]}]}`)

// readPodDefault reads the PodDefault ns/name from the API server.
func readPodDefault(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(notebook.GroupVersionKind)
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// TestSurvivesEveryPerturbation runs every crash, stale and unobserved
// plan of the scenario; the plugin calls no outside system.
func TestSurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, scenario, plugintest.ClusterPatterns...)
}

// TestHarnessLeavesTheSchemeAlone: the harness's stale views are fake
// clients, which register every unstructured kind they are handed in
// their scheme; the test's scheme, which the test's hosts share, must not
// learn PodDefaults that way, or a host made after the harness builds its
// watch on PodDefaults from an object without a kind and never starts.
func TestHarnessLeavesTheSchemeAlone(t *testing.T) {
	s := env.Client.Scheme()
	if s.Recognizes(notebook.GroupVersionKind) {
		t.Fatalf("the test's scheme knows %s before the harness ran", notebook.GroupVersionKind)
	}
	plans := plugintest.Harness{Client: env.Client}.StaleAtEveryWrite(t, scenario(t))
	if plans.Run == 0 {
		t.Fatal("no stale plan ran")
	}
	if s.Recognizes(notebook.GroupVersionKind) {
		t.Errorf("after %d stale plans the test's scheme knows %s: the harness's fake clients registered it there", plans.Run, notebook.GroupVersionKind)
	}
}
