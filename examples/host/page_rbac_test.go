package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// TestPageUnderDeployedRBAC runs the host with the quotas plugin and the
// page on the test API server as a ServiceAccount bound to exactly the
// ClusterRoles that the chart (with page.enabled) and the page overlay
// grant the host's, and opens the page as its users: the plugin writes its
// quota, the page's caches sync, and its SubjectAccessReviews are allowed,
// so that the owner sees the namespace with the quota and a contributor
// added in the dashboard, that contributor finds it too, and a stranger
// gets 404. The manager's own cache holds no binding KFAM made: only the
// page's cache of memberships does.
func TestPageUnderDeployedRBAC(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs func(t *testing.T) []*unstructured.Unstructured
	}{
		{"helm", func(t *testing.T) []*unstructured.Unstructured {
			return helmTemplate(t, "--set", "page.enabled=true", "--set", "config.plugins.quotas.enabled=all")
		}},
		{"kustomize", func(t *testing.T) []*unstructured.Unstructured { return kustomize(t, deployDir+"/overlays/page") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := asDeployedHost(t, tc.objs(t))
			checkPageAs(t, rc)
		})
	}
}

// asDeployedHost copies the ClusterRoles that objs bind to the host's
// ServiceAccount, binds the copies to a ServiceAccount of the test's own,
// and returns a configuration that acts as it.
func asDeployedHost(t *testing.T, objs []*unstructured.Unstructured) *rest.Config {
	t.Helper()
	ctx := t.Context()
	suffix := rand.String(5)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "profilekit-" + suffix, Namespace: hostNamespace}}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	create := func(obj client.Object) {
		t.Helper()
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	}
	create(sa)
	for _, u := range objs {
		if u.GetKind() != "ClusterRoleBinding" {
			continue
		}
		crb := one[rbacv1.ClusterRoleBinding](t, []*unstructured.Unstructured{u}, "ClusterRoleBinding", u.GetName())
		if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "profilekit" || crb.Subjects[0].Namespace != hostNamespace {
			continue
		}
		cr := one[rbacv1.ClusterRole](t, objs, "ClusterRole", crb.RoleRef.Name)
		if cr.Name != crb.RoleRef.Name {
			t.Fatalf("ClusterRole %s is not in the output", crb.RoleRef.Name)
		}
		copied := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: cr.Name + "-" + suffix}, Rules: cr.Rules}
		create(copied)
		create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: copied.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: copied.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: hostNamespace}}})
	}
	rc := rest.CopyConfig(env.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + hostNamespace + ":" + sa.Name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + hostNamespace, "system:authenticated"}}
	return rc
}

// checkPageAs runs the host as rc and opens the page as its users.
func checkPageAs(t *testing.T, rc *rest.Config) {
	t.Helper()
	ctx := t.Context()
	reg, _ := registryAndScheme(t)
	addr := freeAddr(t)
	cfg, err := hostconfig.Parse("host.yaml", fmt.Appendf(nil, `
plugins:
  quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}
page: {enabled: true, address: %q, userIdPrefix: "accounts.example.org:"}
`, addr), reg)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := server.NewManager(rc, cfg, reg, server.Options{MetricsAddr: "0", ProbeAddr: "0", Logger: logr.Discard(), SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	testhost.Run(t, mgr)

	name := "page-rbac-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
	if err := env.Client.Create(ctx, reader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), reader) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	for _, m := range []struct{ user, role string }{{testhost.DefaultOwner, "admin"}, {"bob@example.org", "edit"}} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: contributors.BindingName(rbacv1.UserKind, m.user, m.role), Namespace: name,
			Annotations: map[string]string{"user": m.user, "role": m.role}},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: m.user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name}}
		if err := env.Client.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}

	get := func(target, user string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("kubeflow-userid", "accounts.example.org:"+user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	shows := func(target, user string, want ...string) {
		t.Helper()
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			code, body := get(target, user)
			for _, w := range want {
				if code != http.StatusOK || !strings.Contains(body, w) {
					return false, fmt.Sprintf("GET %s as %s: %d, want %q in:\n%s", target, user, code, w, body)
				}
			}
			return true, ""
		})
	}
	shows("/?ns="+name, testhost.DefaultOwner, `<h1 id="namespace">`+name+"</h1>", "<td>limits.cpu</td>",
		`<td class="member">bob@example.org</td><td>edit</td><td>Manage contributors in the dashboard</td>`)
	shows("/", "bob@example.org", `value="`+name+`"`)
	if code, body := get("/?ns="+name, "carol@example.org"); code != http.StatusNotFound {
		t.Errorf("carol, in no binding, sees %s: %d\n%s", name, code, body)
	}

	var rq corev1.ResourceQuota
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &rq); err != nil {
		t.Errorf("the quotas plugin did not write its quota under the deployed RBAC: %v", err)
	}
	var cached metav1.PartialObjectMetadataList
	cached.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("RoleBindingList"))
	if err := mgr.GetClient().List(ctx, &cached, client.InNamespace(name)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	for _, b := range cached.Items {
		t.Errorf("the manager's cache holds RoleBinding %s/%s, which profilekit did not make", b.Namespace, b.Name)
	}
}
