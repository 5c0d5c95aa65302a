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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// TestOverviewUnderDeployedRBAC runs the host with the page on and a staged
// rollout as a ServiceAccount bound to exactly the ClusterRoles and Roles
// the chart grants the host's (asDeployed), and opens the admin overview as a user
// bound to the chart's overview ClusterRole: it lists the Profiles and
// where the rollout stands (its ConfigMap, which the host may get by name
// but not list), and refuses a user without the role.
func TestOverviewUnderDeployedRBAC(t *testing.T) {
	ctx := t.Context()
	leaseNS := "overview-rbac-" + rand.String(5)
	objs := helmTemplate(t, "--set", "page.enabled=true", "--set", "config.plugins.quotas.enabled=all",
		"--set", "config.leaderElection.namespace="+leaseNS, "--set", "config.rollout.batch=50%")
	// The host's ClusterRoles and its Roles in the Lease's namespace, which
	// asDeployed makes.
	rc := asDeployed(t, env.Config, objs)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cr := one[rbacv1.ClusterRole](t, objs, "ClusterRole", "profilekit-overview")
	if err := env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: cr.Name}, Rules: cr.Rules}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "overview-admin-" + rand.String(5)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "root@example.org", APIGroup: rbacv1.GroupName}}}
	must(env.Client.Create(ctx, crb))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crb) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	must(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName, Namespace: leaseNS, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}},
		Data: map[string]string{"stableRevision": "3f2a9c41d0", "stable": `{"quotas":{"enabled":"all"}}`, "candidateRevision": "8e51b7a2c4",
			"started": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano), "batches": "1", "from": "0", "to": "7fffffffffffffff", "paused": "false"}}))

	reg, _ := registryAndScheme(t)
	addr := freeAddr(t)
	cfg, err := hostconfig.Parse("host.yaml", fmt.Appendf(nil, `
leaderElection: {namespace: %s}
rollout: {batch: 50%%}
plugins:
  quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}
page: {enabled: true, address: %q, userIdPrefix: "accounts.example.org:"}
`, leaseNS, addr), reg)
	must(err)
	mgr, err := server.NewManager(rc, cfg, reg, server.Options{MetricsAddr: "0", ProbeAddr: "0", Logger: logr.Discard(), SkipNameValidation: true})
	must(err)
	testhost.Run(t, mgr)
	name := "overview-rbac-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)

	get := func(user string) (int, string) {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+addr+"/overview?q="+name, nil)
		must(err)
		req.Header.Set("kubeflow-userid", "accounts.example.org:"+user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body := get("root@example.org")
		for _, w := range []string{`data-profile="` + name + `"`, "Rolling out: revision <code>8e51b7a2c4</code>, batch 1"} {
			if code != http.StatusOK || !strings.Contains(body, w) {
				return false, fmt.Sprintf("GET /overview as root: %d, want %q in:\n%s", code, w, body)
			}
		}
		return true, ""
	})
	if code, body := get("carol@example.org"); code != http.StatusForbidden || strings.Contains(body, name) {
		t.Errorf("a user without the role: %d\n%s", code, body)
	}
}
