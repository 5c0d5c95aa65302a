package authpolicy_test

import (
	"encoding/json"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/authpolicy"
)

// The access policy of a Profile with a user and a group as contributors, as
// the access-management service binds them: the user-id header and the
// groups header count only on requests from the ingress gateway, and the
// group is matched alone, first or last in its header.
func ExampleAccessSpec() {
	cfg := authpolicy.NewConfig()
	cfg.UserIDHeader, cfg.UserIDPrefix = "kubeflow-userid", "" // as if USERID_* were unset
	cfg.Groups.Header = "kubeflow-groups"
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}},
	}
	bindings := []metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{
			Name:        "user-bob-example-org-clusterrole-edit",
			Annotations: map[string]string{"user": "bob@example.org", "role": "edit"},
		}},
		{ObjectMeta: metav1.ObjectMeta{
			Name:        "group-ml-team-clusterrole-view",
			Annotations: map[string]string{"user": "ml-team", "role": "view"},
		}},
	}
	spec, err := authpolicy.AccessSpec(cfg, p, authpolicy.Contributors(bindings, cfg.ContributorRoles))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range spec.Rules {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	// Output:
	// {"from":[{"source":{"principals":["cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"]}}],"when":[{"key":"request.headers[kubeflow-userid]","values":["alice@example.org","bob@example.org"]}]}
	// {"from":[{"source":{"principals":["cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"]}}],"when":[{"key":"request.headers[kubeflow-groups]","values":["ml-team","ml-team,*","*,ml-team"]}]}
	// {"from":[{"source":{"namespaces":["team-a"]}}]}
	// {"from":[{"source":{"principals":["cluster.local/ns/kubeflow/sa/notebook-controller-service-account"]}}],"to":[{"operation":{"paths":["/notebook/team-a/*"]}}]}
}
