package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
)

const monitoringDir = deployDir + "/monitoring"

// TestHelmMonitoring checks the ServiceMonitor, and that the chart's
// PrometheusRule and dashboard are those of examples/deploy/monitoring.
func TestHelmMonitoring(t *testing.T) {
	objs := helmTemplate(t, "--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.grafanaDashboard.enabled=true",
		"--set", "metrics.serviceMonitor.labels.release=prometheus")
	sm := byKind(objs, "ServiceMonitor", "profilekit")
	svc := one[corev1.Service](t, objs, "Service", "profilekit-metrics")
	if sm == nil {
		t.Fatal("no ServiceMonitor")
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 || !maps.Equal(sel, svc.Spec.Selector) {
		t.Errorf("ServiceMonitor selects %v, the metrics Service's pods are %v", sel, svc.Spec.Selector)
	}
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("the metrics Service lacks the label %s=%s the ServiceMonitor selects", k, v)
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints %v, want the Service's port %s", eps, svc.Spec.Ports[0].Name)
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
	}

	rule := byKind(objs, "PrometheusRule", "profilekit")
	if rule == nil {
		t.Fatal("no PrometheusRule")
	}
	standalone := decodeObjects(t, "prometheusrule.yaml", readFile(t, monitoringDir+"/prometheusrule.yaml"))
	if len(standalone) != 1 {
		t.Fatalf("%d objects in prometheusrule.yaml", len(standalone))
	}
	if diff := cmp.Diff(standalone[0].Object["spec"], rule.Object["spec"]); diff != "" {
		t.Errorf("the chart's rules (files/prometheus-rules.yaml) differ from examples/deploy/monitoring/prometheusrule.yaml (-want +got):\n%s", diff)
	}

	dash := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-dashboard")
	if dash.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard", dash.Labels)
	}
	var got, want any
	if err := json.Unmarshal([]byte(dash.Data["profilekit.json"]), &got); err != nil {
		t.Fatalf("the dashboard ConfigMap does not hold JSON: %v", err)
	}
	if err := json.Unmarshal(readFile(t, monitoringDir+"/grafana-dashboard.json"), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart's dashboard (files/grafana-dashboard.json) differs from examples/deploy/monitoring/grafana-dashboard.json (-want +got):\n%s", diff)
	}
}

// TestMonitoringKustomization builds examples/deploy/monitoring: the same
// rules, and the dashboard labelled for Grafana's sidecar.
func TestMonitoringKustomization(t *testing.T) {
	objs := kustomize(t, monitoringDir)
	if byKind(objs, "PrometheusRule", "profilekit") == nil {
		t.Error("no PrometheusRule profilekit")
	}
	cm := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-dashboard")
	if cm.Labels["grafana_dashboard"] != "1" || cm.Data["profilekit.json"] != string(readFile(t, monitoringDir+"/grafana-dashboard.json")) {
		t.Errorf("dashboard ConfigMap labels %v, keys %v", cm.Labels, slices.Collect(maps.Keys(cm.Data)))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exported reports whether a scrape exports the metric name: a family of
// that name, or a series of a histogram (_bucket, _sum, _count) or a
// summary (_sum, _count).
func exported(name string, fams map[string]*dto.MetricFamily) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for suffix, types := range map[string][]dto.MetricType{
		"_bucket": {dto.MetricType_HISTOGRAM},
		"_sum":    {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
		"_count":  {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
	} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && slices.Contains(types, f.GetType()) {
				return true
			}
		}
	}
	return false
}

// missingMetrics returns the names that fams does not export, and where
// each is used.
func missingMetrics(used map[string][]string, fams map[string]*dto.MetricFamily) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if !exported(name, fams) {
			out = append(out, fmt.Sprintf("%s (in %s)", name, strings.Join(used[name], "; ")))
		}
	}
	return out
}

func TestMissingMetrics(t *testing.T) {
	text := `# TYPE a_total counter
a_total{plugin="quotas"} 1
# TYPE h_seconds histogram
h_seconds_bucket{le="+Inf"} 1
h_seconds_sum 0.1
h_seconds_count 1
# TYPE c_total counter
c_total 1
`
	fams := parseMetrics(t, text)
	used := map[string][]string{
		"a_total": {"panel A"}, "h_seconds_bucket": {"panel B"}, "h_seconds_count": {"panel B"},
		"c_total_bucket": {"panel C"}, "profilekit_nope_total": {"panel D"},
	}
	want := []string{"c_total_bucket (in panel C)", "profilekit_nope_total (in panel D)"}
	if diff := cmp.Diff(want, missingMetrics(used, fams)); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
}

func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse metrics: %v", err)
	}
	return fams
}

// TestMonitoringMetricsExported runs the host with every plugin it is built
// with on its own control plane, under the chart's RBAC for that
// configuration, gives it a Profile that every plugin acts on (one of them
// fails on a bad label, and blobcsi calls Azurite), and checks that every
// metric the dashboard and the alert rules name is one the host exports at
// /metrics, that what it exports has the types and labels of the metrics
// table, and that a real Prometheus scraping it finds every series the
// dashboard and the rules select, with the labels they read. Then the
// plugins revoke under that RBAC too (checkEveryPluginRevokes).
func TestMonitoringMetricsExported(t *testing.T) {
	used := monitoringMetrics(t)

	crds := filepath.Join(testenv.RepoRoot(), "plugins", "notebook", "testdata", "poddefault-crd.yaml")
	// The templates plugin's ServiceMonitor (config/templates.yaml).
	prometheusCRDs, err := testenv.PrometheusOperatorCRDs()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := testenv.Start(testenv.Options{Istio: true, ArgoCD: true, CRDPaths: []string{crds, prometheusCRDs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	azurite, err := testenv.StartAzurite()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = azurite.Close() })

	ctx := t.Context()
	profile := "metrics-" + rand.String(5)
	grants, _ := json.Marshal([]map[string]any{{"bucketName": "shared-data", "readers": []string{profile}}})
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}},
		// replicate's source in config/istio.yaml.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform-secrets"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-pull", Namespace: "platform-secrets"}, StringData: map[string]string{"token": "t"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "azurite", Namespace: hostNamespace}, StringData: map[string]string{
			blobcsi.SecretAccountName: azurite.Account, blobcsi.SecretAccountKey: azurite.Key}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "grants", Namespace: hostNamespace}, Data: map[string]string{"buckets": string(grants)}},
	} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	cfgPath := filepath.Join(t.TempDir(), "host.yaml")
	data := everyPluginConfig(t, azurite)
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The host as the chart deploys it with this configuration, through
	// the test's proxy.
	kubeconfig := deployedKubeconfig(t, underChartFile(t, cp.Config, cfgPath))
	metricsAddr := freeAddr(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), asBinary+"=1", asBinary+"_ARGS="+strings.Join([]string{"run", "--config", cfgPath, "--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0", "--log-level", "error"}, " "))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})

	// One Profile that lists the plugins enabled only for Profiles that list
	// them (but the cloud identity ones, which would call the clouds), opts
	// in to apps, and asks quotas for a memory limit that is not a quantity.
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: profile, Labels: map[string]string{
			"apps.example.org/s3-browser":         "true",
			"quotas.profilekit.dev/limits.memory": "lots",
			egressGate:                            "true",
		}},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"}},
	}
	for _, kind := range []string{"limitrange", "replicate", "volumes"} {
		p.Spec.Plugins = append(p.Spec.Plugins, kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: kind}})
	}
	p.Spec.Plugins = append(p.Spec.Plugins, everyPluginSpecs...)
	if err := cp.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}

	var missing []string
	var fams map[string]*dto.MetricFamily
	testhost.Eventually(t, 90*time.Second, func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("the host exited: %v\n%s", err, stderr.String())
		default:
		}
		code, body := httpStatus("http://" + metricsAddr + "/metrics")
		if code != http.StatusOK {
			return false, fmt.Sprintf("/metrics: %d %s", code, body)
		}
		fams = parseMetrics(t, body)
		missing = missingMetrics(used, fams)
		return len(missing) == 0, "the host does not export:\n" + strings.Join(missing, "\n")
	})
	checkMetricsTable(t, fams)
	checkPrometheusScrape(t, metricsAddr)
	checkEveryPluginRevokes(t, cp.Client, profile)
}

// everyPluginConfig merges the shipped configurations into one that enables
// every plugin the binary is built with, keeps its Lease in
// profilekit-system, resyncs every few seconds (so that outside state is
// found unchanged), and points blobcsi at Azurite with its grants in a
// ConfigMap.
func everyPluginConfig(t *testing.T, azurite *testenv.Azurite) []byte {
	t.Helper()
	sections := map[string]any{}
	for _, f := range []string{"config/istio.yaml", "config/argocd-apps.yaml", "config/cloud-identity.yaml", "config/templates.yaml", "config/lab-budgets.yaml"} {
		var cfg struct {
			Plugins map[string]any `json:"plugins"`
		}
		if err := yaml.Unmarshal(readFile(t, f), &cfg); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		maps.Copy(sections, cfg.Plugins)
	}
	sections[blobcsi.Kind] = map[string]any{
		"enabled": "all",
		"defaults": map[string]any{
			"storage": []any{map[string]any{
				"name": "standard", "account": azurite.Account, "blobEndpoint": azurite.BlobURL, "default": true,
				"credentials": map[string]any{"secretName": "azurite", "secretNamespace": hostNamespace},
			}},
			"grantSources": []any{map[string]any{
				"name": "shared", "instance": "standard",
				"configMap": map[string]any{"namespace": hostNamespace, "name": "grants"},
			}},
		},
	}
	var kinds []string
	for _, def := range builtin.Definitions() {
		kinds = append(kinds, def.Kind())
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(kinds)), slices.Sorted(maps.Keys(sections))); diff != "" {
		t.Fatalf("the configuration does not enable exactly the plugins the binary is built with (-built +enabled):\n%s", diff)
	}
	data, err := yaml.Marshal(map[string]any{
		"resyncPeriod":   "3s",
		"leaderElection": map[string]any{"id": "profilekit-metrics", "namespace": hostNamespace},
		"plugins":        sections,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostconfig.Parse("every plugin", data, reg); err != nil {
		t.Fatalf("the merged configuration is not valid: %v", err)
	}
	return data
}
