package notebook_test

import (
	"encoding/json"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/notebook"
)

// The StatCan-style Protected B option, from host defaults to the PodDefault
// written in a Profile's namespace (before profilekit's labels, owner
// reference and hash are added).
func ExampleBuild() {
	defaults := []byte(`{"podDefaults": [{
		"name": "protected-b",
		"desc": "Run with Protected B data",
		"selector": {"matchLabels": {"notebook.statcan.gc.ca/protected-b": "true"}},
		"labels": {"data.statcan.gc.ca/classification": "protected-b"}
	}]}`)
	cfg, err := notebook.Definition().DecodeHostDefaults(defaults)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	pds, err := notebook.Build(cfg.(*notebook.Config), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(pds[0])
	// Output:
	// {
	//   "kind": "PodDefault",
	//   "apiVersion": "kubeflow.org/v1alpha1",
	//   "metadata": {
	//     "name": "protected-b",
	//     "namespace": "team-a"
	//   },
	//   "spec": {
	//     "selector": {
	//       "matchLabels": {
	//         "notebook.statcan.gc.ca/protected-b": "true"
	//       }
	//     },
	//     "desc": "Run with Protected B data",
	//     "labels": {
	//       "data.statcan.gc.ca/classification": "protected-b"
	//     }
	//   }
	// }
}
