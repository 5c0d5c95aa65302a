package contributors_test

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/contributors"
)

// A Profile with a user, a group and an admin, under a host that configures
// a groups header and keeps admin off: the admin entry is refused, the
// others get KFAM's objects.
func ExampleBuild() {
	def := contributors.Definition()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: kubeflowv1.ProfileSpec{
			Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"},
			Plugins: []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: contributors.Kind}, Spec: &runtime.RawExtension{Raw: []byte(`{"contributors": [
				{"kind": "User", "name": "bob@example.org", "role": "edit"},
				{"kind": "Group", "name": "team-a-readers", "role": "view"},
				{"kind": "User", "name": "carol@example.org", "role": "admin"}
			]}`)}}},
		},
	}
	cfg, err := def.Decode([]byte(`{"groups": {"header": "kubeflow-groups"}}`), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := contributors.Build(cfg.(*contributors.Config), p)
	for _, b := range objs.Bindings {
		fmt.Printf("RoleBinding %s -> %s %s\n", *b.Name, *b.Subjects[0].Kind, *b.RoleRef.Name)
	}
	for _, ap := range objs.Policies {
		fmt.Printf("AuthorizationPolicy %s: %s\n", *ap.Name, ap.Spec.Rules[0].When[0].Key)
	}
	fmt.Println(err)
	// Output:
	// RoleBinding group-team-a-readers-clusterrole-view -> Group kubeflow-view
	// RoleBinding user-bob-example-org-clusterrole-edit -> User kubeflow-edit
	// AuthorizationPolicy group-team-a-readers-clusterrole-view: request.headers[kubeflow-groups]
	// AuthorizationPolicy user-bob-example-org-clusterrole-edit: request.headers[kubeflow-userid]
	// spec.plugins[0] (contributors).spec.contributors[2] (User "carol@example.org", role "admin"): role admin is not among the roles the host allows (edit, view)
}
