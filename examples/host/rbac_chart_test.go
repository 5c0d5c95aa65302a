package main

// This file runs test hosts under exactly the RBAC a deployment gives the
// host: the chart (or a kustomize overlay) is rendered for the test's host
// configuration, the roles bound to the host's ServiceAccount are applied
// to the test's API server under names of the test's own, and the host
// acts as that ServiceAccount. What it sends is recorded (rbac_use_test.go):
// a request the API server forbids fails the test.

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

// chartSubject is the ServiceAccount the chart and the kustomize base make
// for the host and bind its roles to.
var chartSubject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "profilekit", Namespace: hostNamespace}

// chartFor renders the chart for the host configuration cfg.
func chartFor(t *testing.T, cfg *hostconfig.Config, helmArgs ...string) []*unstructured.Unstructured {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return helmTemplate(t, append([]string{"--set-file", "config=" + path}, helmArgs...)...)
}

// underChartFile renders the chart for the host configuration file path
// (with extra helm arguments, such as -f values.yaml), applies what it
// binds to the host's ServiceAccount to the cluster admin reaches, and
// returns a configuration that acts as that ServiceAccount. See
// asDeployed.
func underChartFile(t *testing.T, admin *rest.Config, path string, helmArgs ...string) *rest.Config {
	t.Helper()
	return asDeployed(t, admin, helmTemplate(t, append([]string{"--set-file", "config=" + path}, helmArgs...)...))
}

// asDeployed applies the roles objs bind to the host's ServiceAccount, as
// copies named after the test with their bindings, to a ServiceAccount of
// the test's own, in the cluster admin reaches, and returns a copy of admin
// that impersonates that ServiceAccount. Every request sent through it is
// recorded against the copied rules (rbacUse); a request the API server
// forbids, or one it allows that no copied rule grants, fails the test when
// it ends, after the hosts the test started have stopped (start them after
// calling asDeployed).
func asDeployed(t *testing.T, admin *rest.Config, objs []*unstructured.Unstructured) *rest.Config {
	t.Helper()
	rc, _ := asDeployedUse(t, admin, objs, true)
	return rc
}

// asDeployedUse is asDeployed, and returns the record of what the
// configuration's requests used too. Unless counted, the deployment's
// rules are not among those the package reports as unused (see
// useRecord.deployment).
func asDeployedUse(t *testing.T, admin *rest.Config, objs []*unstructured.Unstructured, counted bool) (*rest.Config, *deploymentUse) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	c, err := client.New(admin, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	suffix := rand.String(5)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: chartSubject.Name + "-" + suffix, Namespace: chartSubject.Namespace}}
	var made []client.Object
	create := func(obj client.Object) {
		t.Helper()
		if ns := obj.GetNamespace(); ns != "" {
			// The namespaces the chart's Roles are in, which the chart's
			// user makes (helm install --create-namespace) or has.
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
				t.Fatal(err)
			}
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
		made = append(made, obj)
	}
	create(sa)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}
	var grants []grant
	bound := 0
	for _, hb := range hostBindings(t, objs) {
		u, ref := hb.binding, hb.ref
		bound++
		ns := u.GetNamespace()
		rules := boundRules(t, objs, ref, ns)
		name := ref.Name + "-" + suffix
		meta := metav1.ObjectMeta{Name: name, Namespace: ns}
		copiedRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: ref.Kind, Name: name}
		if ref.Kind == "ClusterRole" {
			create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})
		} else {
			create(&rbacv1.Role{ObjectMeta: meta, Rules: rules})
		}
		if u.GetKind() == "ClusterRoleBinding" {
			create(&rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: copiedRef, Subjects: []rbacv1.Subject{subject}})
		} else {
			create(&rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: copiedRef, Subjects: []rbacv1.Subject{subject}})
		}
		grants = append(grants, grantsOf(ref.Kind+" "+ref.Name, ns, rules)...)
	}
	if bound == 0 {
		t.Fatalf("nothing in the output binds a role to ServiceAccount %s/%s", chartSubject.Namespace, chartSubject.Name)
	}
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = c.Delete(ctx, made[i])
		}
	})

	rec := rbacUse.deployment(grants, counted)
	t.Cleanup(func() {
		for _, f := range rec.failures() {
			t.Errorf("under the deployed RBAC: %s", f)
		}
		if n := rec.settlingForbidden.Load(); n > 0 {
			t.Logf("under the deployed RBAC: %d requests forbidden while the API server started again", n)
		}
	})
	rc := rest.CopyConfig(admin)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}}
	rc.Wrap(rec.wrap)
	return rc, rec
}

// hostBinding is a binding in objs of a role to the chart's ServiceAccount
// alone, and the role it refers to.
type hostBinding struct {
	binding *unstructured.Unstructured
	ref     rbacv1.RoleRef
}

// hostBindings returns the ClusterRoleBindings and RoleBindings in objs
// that bind a role to the chart's ServiceAccount alone.
func hostBindings(t *testing.T, objs []*unstructured.Unstructured) []hostBinding {
	t.Helper()
	var out []hostBinding
	for _, u := range objs {
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		switch u.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			convert(t, u, &b)
			ref, subjects = b.RoleRef, b.Subjects
		case "RoleBinding":
			var b rbacv1.RoleBinding
			convert(t, u, &b)
			ref, subjects = b.RoleRef, b.Subjects
		default:
			continue
		}
		if len(subjects) == 1 && subjects[0].Kind == chartSubject.Kind && subjects[0].Name == chartSubject.Name && subjects[0].Namespace == chartSubject.Namespace {
			out = append(out, hostBinding{binding: u, ref: ref})
		}
	}
	return out
}

// boundRules returns the rules of the role ref names, from objs: a
// ClusterRole, or a Role in namespace ns.
func boundRules(t *testing.T, objs []*unstructured.Unstructured, ref rbacv1.RoleRef, ns string) []rbacv1.PolicyRule {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != ref.Kind || u.GetName() != ref.Name {
			continue
		}
		if ref.Kind == "ClusterRole" {
			var r rbacv1.ClusterRole
			convert(t, u, &r)
			return r.Rules
		}
		if u.GetNamespace() == ns {
			var r rbacv1.Role
			convert(t, u, &r)
			return r.Rules
		}
	}
	t.Fatalf("%s %s, bound to the host, is not in the output", ref.Kind, ref.Name)
	return nil
}

func convert(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// deployedKubeconfig returns a kubeconfig for a process of its own (the
// binary run as a child, or run's --kubeconfig) that reaches the API server
// as rc does: through a proxy in the test that sends every request with
// rc's credentials and impersonation, so that rc's recorder sees them. The
// kubeconfig itself holds no credentials.
func deployedKubeconfig(t *testing.T, rc *rest.Config) string {
	t.Helper()
	transport, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1
	// TLS, as clients expect of an API server.
	srv := httptest.NewTLSServer(proxy)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return writeKubeconfigFor(t, srv.URL, ca, "")
}
