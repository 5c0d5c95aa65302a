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
// roles that the chart (with page.enabled) and the page overlay grant the
// host's (asDeployed), and opens the page as its users: the plugin writes its
// quota, the page's caches sync, and its SubjectAccessReviews are allowed,
// so that the owner sees the namespace with the quota and a contributor
// added in the dashboard, that contributor finds it too, and a stranger
// gets 404. The manager's own cache holds no binding KFAM made: only the
// page's cache of memberships does.
func TestPageUnderDeployedRBAC(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs func(t *testing.T) []*unstructured.Unstructured
		// counted: the deployment is made for the configuration the test
		// runs, so its rules count among those the tests must use. The
		// overlay's is made for its own host.yaml, more plugins than the
		// test runs.
		counted bool
	}{
		{"helm", func(t *testing.T) []*unstructured.Unstructured {
			return helmTemplate(t, "--set", "page.enabled=true", "--set", "config.plugins.quotas.enabled=all")
		}, true},
		{"kustomize", func(t *testing.T) []*unstructured.Unstructured { return kustomize(t, deployDir+"/overlays/page") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, _ := asDeployedUse(t, env.Config, tc.objs(t), tc.counted)
			checkPageAs(t, rc)
		})
	}
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
