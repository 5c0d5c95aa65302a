// Package inhost_test opens the tenant page of a running host in a
// browser, on a control plane whose quota controller counts use: the
// page package's own tests set quota use by hand, which that controller
// would overwrite.
package inhost_test

import (
	"net"
	"testing"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	// The quota controller counts pods and copies shares into status.hard,
	// which the budgets plugin's balancer waits for.
	testenv.Main(m, &env, testenv.Options{ExtraControllers: []string{"resourcequota-controller"}})
}

// viewRole is what the page's SubjectAccessReview asks of a user: to list
// pods in the namespace.
const viewRole = "inhost-test-view"

// bindViewer lets user list pods in ns, as the owner's binding does.
func bindViewer(t *testing.T, ns, user string) {
	t.Helper()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: viewRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}
	if err := env.Client.Create(t.Context(), cr); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	must(t, env.Client.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer-" + rand.String(6), Namespace: ns},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewRole},
	}))
}

// freeAddr returns a loopback address free to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func objectKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
