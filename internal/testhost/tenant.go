package testhost

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testenv"
)

// TenantRules are the rights Kubeflow's kubeflow-edit (and, for these
// kinds, kubeflow-admin) gives a Profile's owner and contributors in the
// Profile's namespace. envtest aggregates no ClusterRoles, so tests bind
// them as a Role of their own.
var TenantRules = []rbacv1.PolicyRule{{
	APIGroups: []string{""},
	Resources: []string{"configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts", "pods", "services", "events"},
	Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
}, {
	// kubeflow-poddefaults-edit, which Kubeflow aggregates into kubeflow-edit.
	APIGroups: []string{"kubeflow.org"},
	Resources: []string{"poddefaults"},
	Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
}}

// Tenant returns a client that acts as a user who holds exactly
// TenantRules in namespace and nothing anywhere else: a hostile tenant of
// the Profile whose namespace it is. The user is impersonated, so every
// request goes through the API server's authorization as that user.
func Tenant(t *testing.T, env *testenv.Env, namespace string) client.Client {
	t.Helper()
	ctx := context.Background()
	user := "tenant-" + namespace + "-" + rand.String(4)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user}, Rules: TenantRules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
		Subjects:   []rbacv1.Subject{rbacUser(user)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("tenant %s: %v", user, err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("tenant %s: %v", user, err)
	}
	return c
}
