package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/api/kubeflow/crd"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
)

const (
	chartDir = deployDir + "/helm/profilekit"
	// testImage is the repository the chart tests set; the chart has no
	// default.
	testImage = "registry.example.org/profilekit"
)

// helmCmd runs bin/helm, which make builds, and returns its stdout, or its
// stderr as the error.
func helmCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(testenv.RepoRoot(), "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run `make test` (or `make helm`), which builds Helm from source", bin)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// helmTemplate renders the chart as the release profilekit in
// profilekit-system, the names the kustomize base uses, with the test image
// and args.
func helmTemplate(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helmCmd(t, append([]string{"template", "profilekit", chartDir, "--namespace", hostNamespace, "--set", "image.repository=" + testImage}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decodeObjects(t, "helm template", []byte(out))
}

func TestHelmLint(t *testing.T) {
	if out, err := helmCmd(t, "lint", "--strict", chartDir, "--set", "image.repository="+testImage); err != nil {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
	// There is no public image, so no default repository either.
	_, err := helmCmd(t, "template", "profilekit", chartDir)
	if err == nil || !strings.Contains(err.Error(), "image.repository is required") {
		t.Errorf("helm template without image.repository: %v, want an error naming image.repository", err)
	}
}

// TestHelmChart renders the chart with its default configuration and with
// each shipped configuration, and checks the host's objects as the kustomize
// overlays' are checked, and more: the ClusterRole grants exactly what the
// enabled plugins need.
func TestHelmChart(t *testing.T) {
	reg, scheme := registryAndScheme(t)
	configs, err := filepath.Glob("config/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	configs = append(configs, servicePrincipalStorage(t))
	for _, source := range append([]string{""}, configs...) {
		name, args := "default", []string(nil)
		if source != "" {
			name, args = filepath.Base(source), []string{"--set-file", "config=" + source}
		}
		t.Run(name, func(t *testing.T) {
			objs := helmTemplate(t, args...)
			for _, u := range objs {
				if u.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(u.GetName(), "profilekit") {
					t.Errorf("%s %s is not named after the release", u.GetKind(), u.GetName())
				}
			}
			if source == "" {
				// The chart's default, files/host.yaml, is the plain configuration.
				source = "config/host.yaml"
			}
			cfg, cm := checkHostObjects(t, reg, objs, source, hostKinds...)
			checkDeployment(t, objs, cm)
			cr, need := checkHostRBAC(t, reg, scheme, cfg, objs)
			checkNothingElse(t, cr, need)
			if sec, on := cfg.Section(blobcsi.Kind); on {
				checkStorageRoles(t, reg, sec, objs)
			}
			checkPage(t, cfg, objs, kubeflowMesh)
		})
	}
	for _, overlay := range []string{"webhook-cert-manager", "webhook-self-signed"} {
		t.Run(overlay, func(t *testing.T) {
			checkWebhook(t, reg, helmTemplate(t, "--set-file", "config="+deployDir+"/overlays/"+overlay+"/host.yaml"))
		})
	}
}

// checkNothingElse checks that the ClusterRole grants nothing beyond need,
// but on objects it names.
func checkNothingElse(t *testing.T, cr *rbacv1.ClusterRole, need []access) {
	t.Helper()
	for _, r := range cr.Rules {
		if len(r.ResourceNames) > 0 {
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if !slices.Contains(need, access{g, res, v}) {
						t.Errorf("ClusterRole grants %s on %s.%s, which neither an enabled plugin nor the page needs", v, res, g)
					}
				}
			}
		}
	}
}

// servicePrincipalStorage writes config/statcan-storage.yaml with its
// Protected B instance reached through a service principal rather than an
// account key, and returns the file's path.
func servicePrincipalStorage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("config/statcan-storage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const key = "credentials: {secretName: aawdevcc00samgprotb, secretNamespace: azure-blob-csi-system}"
	if !bytes.Contains(data, []byte(key)) {
		t.Fatalf("config/statcan-storage.yaml no longer holds %q", key)
	}
	data = bytes.Replace(data, []byte(key), []byte("credentials: {type: ServicePrincipal, principal: fdi-protected-b}"), 1)
	path := filepath.Join(t.TempDir(), "statcan-storage-spn.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkStorageRoles checks that blobcsi may read each storage account's
// Secret, by name, in the Secret's namespace, and the grants ConfigMaps in
// theirs.
func checkStorageRoles(t *testing.T, reg *plugins.Registry, sec hostconfig.Plugin, objs []*unstructured.Unstructured) {
	t.Helper()
	cfg := hostDefaults[blobcsi.Config](t, reg, blobcsi.Kind, sec)
	role := func(ns string) []rbacv1.PolicyRule {
		for _, u := range objs {
			if u.GetKind() == "Role" && u.GetName() == "profilekit-storage" && u.GetNamespace() == ns {
				var r rbacv1.Role
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
					t.Fatal(err)
				}
				return r.Rules
			}
		}
		return nil
	}
	for _, in := range cfg.Storage {
		c := in.Credentials
		if c.SecretName != "" && !allowsNamed(role(c.SecretNamespace), "", "secrets", "get", c.SecretName) {
			t.Errorf("no Role lets the host get Secret %s/%s of storage instance %s", c.SecretNamespace, c.SecretName, in.Name)
		}
		if c.Type == blobcsi.ServicePrincipal {
			s := cfg.Principals[c.Principal].Secret
			if !allowsNamed(role(s.Namespace), "", "secrets", "get", s.Name) {
				t.Errorf("no Role lets the host get Secret %s/%s of principal %s, which storage instance %s creates containers with", s.Namespace, s.Name, c.Principal, in.Name)
			}
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Role" && u.GetNamespace() == "" {
			t.Errorf("Role %s has no namespace", u.GetName())
		}
	}
	for _, gs := range cfg.GrantSources {
		if gs.ConfigMap != nil && !allows(role(gs.ConfigMap.Namespace), "", "configmaps", "watch") {
			t.Errorf("no Role lets the host watch the grants ConfigMap %s/%s", gs.ConfigMap.Namespace, gs.ConfigMap.Name)
		}
	}
}

// TestHelmValues checks that the values reach the objects.
func TestHelmValues(t *testing.T) {
	values := `
image: {tag: v1.2.3, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", pullPolicy: Always}
replicas: 3
logLevel: debug
extraArgs: [--kube-api-qps=300]
env: [{name: USERID_HEADER, value: x-user}]
serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/profilekit"}}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/name: profilekit}}}}]}}
resources: {requests: {cpu: 200m, memory: 256Mi}, limits: {memory: 1Gi}}
rbac: {extraRules: [{apiGroups: [""], resources: [nodes], verbs: [get]}]}
crd: {install: false}
config:
  plugins:
    quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}
`
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := helmTemplate(t, "-f", file)
	dep := checkDeployment(t, objs, "profilekit-config")
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	for _, check := range []struct {
		what      string
		got, want any
	}{
		{"image", c.Image, testImage + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"pull policy", string(c.ImagePullPolicy), "Always"},
		{"replicas", *dep.Spec.Replicas, int32(3)},
		{"log level", slices.Contains(c.Args, "--log-level=debug"), true},
		{"extra args", c.Args[len(c.Args)-1], "--kube-api-qps=300"},
		{"env", c.Env, []corev1.EnvVar{{Name: "USERID_HEADER", Value: "x-user"}}},
		{"node selector", pod.NodeSelector, map[string]string{"kubernetes.io/os": "linux"}},
		{"tolerations", len(pod.Tolerations), 1},
		{"affinity", pod.Affinity != nil && pod.Affinity.PodAntiAffinity != nil, true},
		{"memory limit", c.Resources.Limits.Memory().String(), "1Gi"},
		{"service account annotation", one[corev1.ServiceAccount](t, objs, "ServiceAccount", "profilekit").Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::111122223333:role/profilekit"},
		{"extra rule", allows(one[rbacv1.ClusterRole](t, objs, "ClusterRole", "profilekit").Rules, "", "nodes", "get"), true},
		{"CRD left out", byKind(objs, "CustomResourceDefinition", "profiles.kubeflow.org") == nil, true},
	} {
		if diff := cmp.Diff(check.want, check.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", check.what, diff)
		}
	}
	// A map config is written as YAML, and a plugin the chart knows no rules
	// for is refused rather than deployed without them.
	cm := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-config")
	if !strings.Contains(cm.Data["host.yaml"], "quotas:") {
		t.Errorf("host.yaml %q", cm.Data["host.yaml"])
	}
	_, err := helmCmd(t, "template", "profilekit", chartDir, "--set", "image.repository="+testImage, "--set", "config.plugins.nope.enabled=all")
	if err == nil || !strings.Contains(err.Error(), "plugins.nope: the chart knows no RBAC for this plugin") {
		t.Errorf("unknown plugin: %v", err)
	}

	// The default install keeps the Profile CRD, as api/kubeflow/crd has it,
	// when the release goes: deleting it would delete every Profile.
	objs = helmTemplate(t)
	u := byKind(objs, "CustomResourceDefinition", "profiles.kubeflow.org")
	if u == nil {
		t.Fatal("no Profile CRD by default")
	}
	if got := u.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
		t.Errorf("CRD resource policy %q, want keep", got)
	}
	var got, want apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(crd.Profiles, &want); err != nil {
		t.Fatal(err)
	}
	delete(got.Annotations, "helm.sh/resource-policy")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart's CRD differs from api/kubeflow/crd; copy it to files/ again (-want +got):\n%s", diff)
	}
}

// TestHelmApply applies what the chart renders, for several sets of values,
// to the test API server, which validates every object against its schema:
// the ServiceMonitor and PrometheusRule against the Prometheus Operator's
// CRDs, the page's Istio objects against Istio's, the
// ValidatingAdmissionPolicy's expressions by compiling them. The
// cert-manager variant of the webhook is left out: no cert-manager CRDs are
// installed here.
func TestHelmApply(t *testing.T) {
	dir, err := testenv.PrometheusOperatorCRDs()
	if err != nil {
		t.Fatal(err)
	}
	// The page's VirtualService, AuthorizationPolicy and PeerAuthentication
	// against Istio's.
	istio, err := testenv.IstioCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir, istio}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	monitoring := []string{"--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.grafanaDashboard.enabled=true"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default with monitoring", monitoring},
		{"istio", []string{"--set-file", "config=config/istio.yaml"}},
		{"argocd-apps", []string{"--set-file", "config=config/argocd-apps.yaml"}},
		{"storage", []string{"--set-file", "config=config/statcan-storage.yaml"}},
		{"cloud-identity", []string{"--set-file", "config=config/cloud-identity.yaml"}},
		{"lab-budgets", []string{"--set-file", "config=config/lab-budgets.yaml"}},
		{"staged rollout", []string{"--set-file", "config=testdata/rollout/quota.yaml"}},
		{"self-signed webhook", []string{"--set-file", "config=" + deployDir + "/overlays/webhook-self-signed/host.yaml"}},
		{"page with the webhook", []string{"--set-file", "config=" + deployDir + "/overlays/webhook-self-signed/host.yaml", "--set", "page.enabled=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.args...)
			ctx := t.Context()
			for _, u := range objs {
				if ns := u.GetNamespace(); ns != "" {
					err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						t.Fatal(err)
					}
				}
			}
			for _, u := range objs {
				if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("helm-test"), client.ForceOwnership); err != nil {
					t.Errorf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
				}
				if u.GetNamespace() == "" && u.GetKind() != "CustomResourceDefinition" {
					// Cluster-scoped objects go with the test; the Profile CRD
					// stays for the other tests.
					t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) }) //nolint:forbidigo // cleanups run after t.Context is canceled
				}
			}
			for _, u := range objs {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(u.GroupVersionKind())
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
					t.Errorf("%s %s/%s is not on the server: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
				}
			}
		})
	}
}
