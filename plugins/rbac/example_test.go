package rbac_test

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/rbac"
)

// A support group in every namespace and the pipelines service account in
// its own namespace, for a Profile named team-a.
func ExampleBuild() {
	defaults := []byte(`{"bindings": [
		{"name": "support-view", "roleRef": {"kind": "ClusterRole", "name": "view"},
		 "subjects": [{"kind": "Group", "name": "support@example.org"}, {"kind": "User", "name": "{{ .Owner }}"}]},
		{"name": "pipeline-runner", "roleRef": {"kind": "ClusterRole", "name": "kubeflow-edit"},
		 "subjects": [{"kind": "ServiceAccount", "name": "default-editor"}]}
	]}`)
	cfg, err := rbac.Definition().DecodeHostDefaults(defaults)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}},
	}
	objs, err := rbac.Build(cfg.(*rbac.Config), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range objs.Bindings {
		fmt.Printf("%s/%s -> %s %s\n", *b.Namespace, *b.Name, *b.RoleRef.Kind, *b.RoleRef.Name)
		for _, s := range b.Subjects {
			fmt.Printf("  %s %s %s\n", *s.Kind, ptr.Deref(s.Namespace, "-"), *s.Name)
		}
	}
	// Output:
	// team-a/support-view -> ClusterRole view
	//   Group - support@example.org
	//   User - alice@example.org
	// team-a/pipeline-runner -> ClusterRole kubeflow-edit
	//   ServiceAccount team-a default-editor
}
