package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/api/kubeflow/crd"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/rbac"
)

const deployDir = "../deploy"

// kustomize builds an overlay with bin/kustomize, which make builds, and
// returns its objects.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	bin := filepath.Join(testenv.RepoRoot(), "bin", "kustomize")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run `make test` (or `make kustomize`), which builds kustomize from source", bin)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "build", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	return decodeObjects(t, dir, stdout.Bytes())
}

// decodeObjects decodes a stream of YAML documents, such as kubectl
// kustomize and helm template print.
func decodeObjects(t *testing.T, what string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

func one[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && (name == "" || u.GetName() == name || strings.HasPrefix(u.GetName(), name+"-")) {
			var out T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
				t.Fatalf("%s %s: %v", kind, u.GetName(), err)
			}
			return &out
		}
	}
	t.Fatalf("no %s %s in the output", kind, name)
	return nil
}

// allows reports whether the rules grant verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
			slices.Contains(r.Verbs, verb) && len(r.ResourceNames) == 0
	})
}

func TestDeployOverlays(t *testing.T) {
	reg, scheme := registryAndScheme(t)
	for _, tc := range []struct {
		overlay string
		// source is the example configuration the overlay's ConfigMap copies.
		source string
	}{
		{overlay: "plain", source: "config/host.yaml"},
		{overlay: "istio", source: "config/istio.yaml"},
		{overlay: "argocd-apps", source: "config/argocd-apps.yaml"},
		{overlay: "storage", source: "config/statcan-storage.yaml"},
		{overlay: "cloud-identity", source: "config/cloud-identity.yaml"},
	} {
		t.Run(tc.overlay, func(t *testing.T) {
			objs := kustomize(t, deployDir+"/overlays/"+tc.overlay)
			cfg, cm := checkHostObjects(t, reg, objs, tc.source, append(hostKinds, "Namespace")...)
			dep := checkDeployment(t, objs, cm)
			if img := dep.Spec.Template.Spec.Containers[0].Image; img != imageName {
				t.Errorf("container image %q; the documented images: entry and kustomize edit set image replace %q", img, imageName)
			}
			checkHostRBAC(t, reg, scheme, cfg, objs)
			checkSameRBACAsChart(t, objs, tc.source)
			checkPage(t, cfg, objs, kubeflowMesh)
		})
	}
}

// checkApplicationRole checks that a Role in the Argo CD namespace, bound
// to the host's service account, grants Applications, and that the
// ClusterRole does not.
func checkApplicationRole(t *testing.T, objs []*unstructured.Unstructured, cluster []rbacv1.PolicyRule) {
	t.Helper()
	role := one[rbacv1.Role](t, objs, "Role", "profilekit-argocd")
	if role.Namespace != apps.DefaultArgoCDNamespace {
		t.Errorf("Application Role in namespace %q", role.Namespace)
	}
	for _, v := range []string{"create", "get", "list", "watch", "patch", "delete"} {
		if !allows(role.Rules, apps.ApplicationKind.Group, "applications", v) {
			t.Errorf("Role %s lacks %s on applications", role.Name, v)
		}
		if allows(cluster, apps.ApplicationKind.Group, "applications", v) {
			t.Errorf("ClusterRole grants %s on applications in every namespace", v)
		}
	}
	rb := one[rbacv1.RoleBinding](t, objs, "RoleBinding", "profilekit-argocd")
	if rb.Namespace != role.Namespace || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "profilekit" {
		t.Errorf("RoleBinding %+v does not bind the Role to the host", rb)
	}
}

// resource guesses the plural resource of a kind, which is right for every
// kind profilekit writes.
func resource(gvk schema.GroupVersionKind) string {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// imageName is the Deployment's image in the base, which a user's overlay
// points at the pushed image.
const imageName = "profilekit"

func TestDeployImageIsSetByAnOverlay(t *testing.T) {
	// What examples/deploy/README.md tells users to write on top of an
	// overlay.
	dir := t.TempDir()
	plain, err := filepath.Abs(deployDir + "/overlays/plain")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, plain)
	if err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf("resources:\n- %s\nimages:\n- name: %s\n  newName: registry.test/platform/profilekit\n  newTag: v1.2.3\n", rel, imageName)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	dep := one[appsv1.Deployment](t, kustomize(t, dir), "Deployment", "profilekit")
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "registry.test/platform/profilekit:v1.2.3" {
		t.Errorf("the overlay's images: entry gives the image %q", got)
	}
}

func TestDeployCRDIsCurrent(t *testing.T) {
	got, err := os.ReadFile(deployDir + "/base/crd/kubeflow.org_profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, crd.Profiles) {
		t.Error("examples/deploy/base/crd/kubeflow.org_profiles.yaml differs from api/kubeflow/crd; copy it again")
	}
}

func TestArgoCDApplicationPointsAtAnOverlay(t *testing.T) {
	data, err := os.ReadFile(deployDir + "/argocd/application.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var app struct {
		Kind string `json:"kind"`
		Spec struct {
			Source struct {
				Path string `json:"path"`
			} `json:"source"`
			Destination struct {
				Namespace string `json:"namespace"`
			} `json:"destination"`
		} `json:"spec"`
	}
	// Only the fields read here matter; the rest is Argo CD's.
	if err := yaml.Unmarshal(data, &app); err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(app.Spec.Source.Path, "examples/deploy/")
	if app.Kind != "Application" || app.Spec.Destination.Namespace != "profilekit-system" {
		t.Errorf("application %+v", app)
	}
	if _, err := os.Stat(fmt.Sprintf("%s/%s/kustomization.yaml", deployDir, path)); err != nil {
		t.Errorf("the Application's path %s is not a kustomization: %v", app.Spec.Source.Path, err)
	}
	kustomize(t, deployDir+"/"+path)
}

// checkGrants checks that the host may grant every role the rbac plugin's
// defaults bind or allow: the API server refuses a binding to a role whose
// rights the writer neither holds nor may bind.
func checkGrants(t *testing.T, reg *plugins.Registry, sec hostconfig.Plugin, rules []rbacv1.PolicyRule) {
	t.Helper()
	cfg := hostDefaults[rbac.Config](t, reg, rbac.Kind, sec)
	refs := slices.Clone(cfg.AllowedRoles)
	for _, b := range cfg.Bindings {
		refs = append(refs, b.RoleRef)
	}
	mayBind := func(resource, name string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, rbacv1.GroupName) && slices.Contains(r.Resources, resource) &&
				slices.Contains(r.Verbs, "bind") && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name))
		})
	}
	for _, ref := range refs {
		resource := "clusterroles"
		if ref.Kind == "Role" {
			resource = "roles"
		}
		if !mayBind(resource, ref.Name) {
			t.Errorf("ClusterRole lacks bind on %s %q, which the rbac configuration binds or allows", resource, ref.Name)
		}
	}
	if len(cfg.Roles) > 0 && !allows(rules, rbacv1.GroupName, "roles", "escalate") {
		t.Error("the rbac configuration writes Roles, and the ClusterRole lacks escalate on roles")
	}
}

// hostDefaults decodes the defaults of a plugin's section into its config.
func hostDefaults[T any](t *testing.T, reg *plugins.Registry, kind string, sec hostconfig.Plugin) *T {
	t.Helper()
	def, _ := reg.Get(kind)
	raw, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*T)
}
