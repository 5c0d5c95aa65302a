package templates_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/templates"
)

// Build shows what a Profile gets from the host's templates, with its
// placeholders filled in; without a REST mapper (offline), every kind
// counts as served.
func ExampleBuild() {
	defaults, _ := yaml.YAMLToJSON([]byte(`
templates:
- name: settings
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: team-settings}
    data: {team: '{{ .Label "example.org/team" }}', owner: '{{ .Owner }}'}
- name: log-reader
  optIn: true
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: pod-log-reader}}
`))
	cfg, err := templates.Definition().DecodeHostDefaults(defaults)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"example.org/team": "data"}}}
	p.Spec.Owner.Kind, p.Spec.Owner.Name = "User", "alice@example.org"
	plan := templates.Build(cfg.(*templates.Config), p, nil)
	for _, o := range plan.Objects {
		data, _, _ := unstructured.NestedStringMap(o.Object.Object, "data")
		fmt.Printf("%s: %s %s/%s %v\n", o.Template, o.Object.GetKind(), o.Object.GetNamespace(), o.Object.GetName(), data)
	}
	// Output:
	// settings: ConfigMap team-a/team-settings map[owner:alice@example.org team:data]
}
