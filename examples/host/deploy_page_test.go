package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/page"
)

// The checks of the tenant page's objects, shared by the kustomize overlay
// and the Helm chart.

// pageMesh is where the page's Istio objects should put it.
type pageMesh struct {
	gateway, prefix, principal string
}

// kubeflowMesh is Kubeflow's: its gateway and ingress gateway identity,
// and the path the shipped menu link opens.
var kubeflowMesh = pageMesh{
	gateway:   "kubeflow/kubeflow-gateway",
	prefix:    "/profilekit/",
	principal: "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
}

// menuLinkFile is the dashboard's menu item for the page.
const menuLinkFile = deployDir + "/components/page/menu-link.json"

// pageNeeds is what the page needs of the API server: a
// SubjectAccessReview per user and namespace, and a read of every kind it
// shows, whichever plugins write them.
func pageNeeds() []access {
	need := grants("authorization.k8s.io", "subjectaccessreviews", "create")
	for _, gvk := range page.Reads {
		// Its caches: the page reads nothing by name.
		need = append(need, grants(gvk.Group, resource(gvk), "list", "watch")...)
	}
	return need
}

// hostRules returns the rules of every ClusterRole that a
// ClusterRoleBinding in objs grants the host's ServiceAccount, as one
// ClusterRole named after the first.
func hostRules(t *testing.T, objs []*unstructured.Unstructured) *rbacv1.ClusterRole {
	t.Helper()
	out := &rbacv1.ClusterRole{}
	for _, u := range objs {
		if u.GetKind() != "ClusterRoleBinding" {
			continue
		}
		crb := one[rbacv1.ClusterRoleBinding](t, []*unstructured.Unstructured{u}, "ClusterRoleBinding", u.GetName())
		if !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == "profilekit" && s.Namespace == hostNamespace
		}) {
			continue
		}
		cr := byKind(objs, "ClusterRole", crb.RoleRef.Name)
		if cr == nil {
			t.Fatalf("ClusterRoleBinding %s grants ClusterRole %s, which is not in the output", crb.Name, crb.RoleRef.Name)
		}
		role := one[rbacv1.ClusterRole](t, []*unstructured.Unstructured{cr}, "ClusterRole", cr.GetName())
		if out.Name == "" {
			out.Name = role.Name
		}
		out.Rules = append(out.Rules, role.Rules...)
	}
	if out.Name == "" {
		t.Fatal("no ClusterRoleBinding grants the host's ServiceAccount a ClusterRole")
	}
	return out
}

// checkPage checks the page's objects in objs against the configuration:
// without the page, none of them and no SubjectAccessReviews; with it, a
// container port at the configuration's address, a Service to it, a
// VirtualService on the gateway at the prefix routed to that Service, an
// AuthorizationPolicy under which only the gateway's principal reaches
// the page's port, and the pod in the mesh.
func checkPage(t *testing.T, cfg *hostconfig.Config, objs []*unstructured.Unstructured, mesh pageMesh) {
	t.Helper()
	rules := hostRules(t, objs).Rules
	dep := one[appsv1.Deployment](t, objs, "Deployment", "profilekit")
	pod := dep.Spec.Template
	if !cfg.Page.Enabled {
		for _, kind := range []string{"VirtualService", "AuthorizationPolicy", "PeerAuthentication"} {
			for _, u := range objs {
				if u.GetKind() == kind {
					t.Errorf("%s %s without the page", kind, u.GetName())
				}
			}
		}
		if byKind(objs, "Service", "profilekit-page") != nil {
			t.Error("Service profilekit-page without the page")
		}
		if allows(rules, "authorization.k8s.io", "subjectaccessreviews", "create") {
			t.Error("the host may create SubjectAccessReviews without the page")
		}
		if slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "page" }) {
			t.Error("a page port without the page")
		}
		return
	}
	_, port, err := net.SplitHostPort(cfg.Page.Address)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "page" && p.ContainerPort > 0 && port == strconv.Itoa(int(p.ContainerPort))
	}) {
		t.Errorf("the container has no port page = %s (page.address %s): %+v", port, cfg.Page.Address, pod.Spec.Containers[0].Ports)
	}
	if pod.Labels["sidecar.istio.io/inject"] != "true" {
		t.Errorf("the host's pods are not injected with the sidecar that enforces the page's policy: labels %v", pod.Labels)
	}

	svc := one[corev1.Service](t, objs, "Service", "profilekit-page")
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "page" {
		t.Errorf("Service %s does not lead to the page's port: %+v", svc.Name, svc.Spec)
	}

	vs := byKind(objs, "VirtualService", "profilekit-page")
	if vs == nil {
		t.Fatal("no VirtualService profilekit-page")
	}
	gateways, _, _ := unstructured.NestedStringSlice(vs.Object, "spec", "gateways")
	routes, _, _ := unstructured.NestedSlice(vs.Object, "spec", "http")
	if !slices.Equal(gateways, []string{mesh.gateway}) || len(routes) != 1 {
		t.Fatalf("VirtualService gateways %v, routes %v; want one route on %s", gateways, routes, mesh.gateway)
	}
	route := routes[0].(map[string]any)
	matches, _, _ := unstructured.NestedSlice(route, "match")
	prefix, _, _ := unstructured.NestedString(matches[0].(map[string]any), "uri", "prefix")
	rewrite, _, _ := unstructured.NestedString(route, "rewrite", "uri")
	dests, _, _ := unstructured.NestedSlice(route, "route")
	host, _, _ := unstructured.NestedString(dests[0].(map[string]any), "destination", "host")
	// Decoded YAML numbers are float64.
	destPort, _, _ := unstructured.NestedFieldNoCopy(dests[0].(map[string]any), "destination", "port", "number")
	if len(matches) != 1 || prefix != mesh.prefix || rewrite != "/" {
		t.Errorf("VirtualService matches %v rewritten to %q; want the prefix %s rewritten to /", matches, rewrite, mesh.prefix)
	}
	if want := svc.Name + "." + svc.Namespace + ".svc.cluster.local"; host != want || fmt.Sprint(destPort) != strconv.Itoa(int(svc.Spec.Ports[0].Port)) {
		t.Errorf("VirtualService routes to %s:%v, want the Service %s:%d", host, destPort, want, svc.Spec.Ports[0].Port)
	}

	ap := byKind(objs, "AuthorizationPolicy", "profilekit-page")
	if ap == nil {
		t.Fatal("no AuthorizationPolicy profilekit-page")
	}
	checkPagePolicy(t, ap, pod.Labels, port, mesh.principal)
	if !allows(rules, "authorization.k8s.io", "subjectaccessreviews", "create") {
		t.Error("the host may not create SubjectAccessReviews, which the page asks for every user")
	}
}

// policyRule is the part of an AuthorizationPolicy rule the checks read.
type policyRule struct {
	From []struct {
		Source map[string][]string `json:"source"`
	} `json:"from"`
	To []struct {
		Operation struct {
			Ports    []string `json:"ports"`
			NotPorts []string `json:"notPorts"`
		} `json:"operation"`
	} `json:"to"`
}

// reaches reports whether the rule admits requests to port.
func (r policyRule) reaches(port string) bool {
	if len(r.To) == 0 {
		return true
	}
	for _, to := range r.To {
		op := to.Operation
		if (len(op.Ports) == 0 || slices.Contains(op.Ports, port)) && !slices.Contains(op.NotPorts, port) {
			return true
		}
	}
	return false
}

// checkPagePolicy checks that policy applies to the host's pods, and that
// every rule that admits requests to the page's port admits only the
// gateway's principal: so that nothing else may claim a user-id header.
func checkPagePolicy(t *testing.T, policy *unstructured.Unstructured, podLabels map[string]string, port, principal string) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(policy.Object, "spec", "selector", "matchLabels")
	action, _, _ := unstructured.NestedString(policy.Object, "spec", "action")
	if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(podLabels)) {
		t.Errorf("AuthorizationPolicy selects %v, not the host's pods (%v)", sel, podLabels)
	}
	if action != "" && action != "ALLOW" {
		t.Errorf("AuthorizationPolicy action %s, want ALLOW", action)
	}
	rules, _, _ := unstructured.NestedSlice(policy.Object, "spec", "rules")
	reaches := 0
	for i, r := range rules {
		var rule policyRule
		data, _ := json.Marshal(r)
		if err := json.Unmarshal(data, &rule); err != nil {
			t.Fatal(err)
		}
		if !rule.reaches(port) {
			continue
		}
		reaches++
		if len(rule.From) != 1 || len(rule.From[0].Source) != 1 || !slices.Equal(rule.From[0].Source["principals"], []string{principal}) {
			t.Errorf("AuthorizationPolicy rule %d admits requests to the page's port %s from %v, not from %s alone", i, port, rule.From, principal)
		}
	}
	if reaches == 0 {
		t.Errorf("no rule of the AuthorizationPolicy admits the gateway to the page's port %s", port)
	}
}

// TestDeployPageOverlay builds the page overlay: the plain configuration
// with the page on, and the page's component.
func TestDeployPageOverlay(t *testing.T) {
	reg, scheme := registryAndScheme(t)
	objs := kustomize(t, deployDir+"/overlays/page")
	cm := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-config")
	plain, err := os.ReadFile("config/host.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cm.Data["host.yaml"], string(plain)) {
		t.Error("the page overlay's host.yaml does not start with a copy of examples/host/config/host.yaml; copy it again")
	}
	cfg, err := hostconfig.Parse("ConfigMap "+cm.Name+" host.yaml", []byte(cm.Data["host.yaml"]), reg)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Page.Enabled {
		t.Fatal("the page overlay's configuration leaves the page off")
	}
	checkDeployment(t, objs, cm.Name)
	checkHostRBAC(t, reg, scheme, cfg, objs)
	checkSameRBACAsChart(t, objs, deployDir+"/overlays/page/host.yaml")
	checkPage(t, cfg, objs, kubeflowMesh)
	checkMenuLink(t, kubeflowMesh.prefix)
}

// checkMenuLink checks that the shipped menu item is one the dashboard
// shows, and opens prefix.
func checkMenuLink(t *testing.T, prefix string) {
	t.Helper()
	data, err := os.ReadFile(menuLinkFile)
	if err != nil {
		t.Fatal(err)
	}
	var item map[string]string
	if err := json.Unmarshal(data, &item); err != nil {
		t.Fatalf("%s: %v", menuLinkFile, err)
	}
	if item["type"] != "item" || item["link"] != prefix || item["text"] == "" || item["icon"] == "" || len(item) != 4 {
		t.Errorf("%s holds %v; want a menu item (type item, link, text, icon) that opens %s", menuLinkFile, item, prefix)
	}
}
