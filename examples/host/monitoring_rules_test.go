package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/internal/testenv"
)

const (
	// chartRulesFile is the chart's rule file: a Prometheus rule file as it
	// is, which the chart wraps in a PrometheusRule.
	chartRulesFile = chartDir + "/files/prometheus-rules.yaml"
	// rulesTestFile holds the alerts' unit tests (promtool test rules).
	rulesTestFile = "testdata/prometheus-rules-test.yaml"
)

// alertRule is an alerting rule of a Prometheus rule file.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// alertRules returns the alerting rules of a Prometheus rule file.
func alertRules(t *testing.T, data []byte) []alertRule {
	t.Helper()
	var file struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var rules []alertRule
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				rules = append(rules, r)
			}
		}
	}
	if len(rules) == 0 {
		t.Fatal("no alerting rules")
	}
	return rules
}

// shippedRuleFiles returns every alert rule file the chart and the
// kustomization ship, as Prometheus rule files: the chart's file as it is,
// and the spec of the PrometheusRule that the chart renders and of the one
// that examples/deploy/monitoring builds.
func shippedRuleFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"chart files/prometheus-rules.yaml": chartRulesFile}
	for where, spec := range map[string]func() []byte{
		"chart PrometheusRule": func() []byte {
			return specOf(t, helmTemplate(t, "--set", "metrics.prometheusRule.enabled=true"), "chart")
		},
		"kustomize PrometheusRule": func() []byte { return specOf(t, kustomize(t, monitoringDir), "kustomize") },
	} {
		path := filepath.Join(dir, strings.ReplaceAll(where, " ", "-")+".yaml")
		if err := os.WriteFile(path, spec(), 0o600); err != nil {
			t.Fatal(err)
		}
		files[where] = path
	}
	return files
}

// specOf returns the spec of the PrometheusRule profilekit among objs, as
// YAML.
func specOf(t *testing.T, objs []*unstructured.Unstructured, where string) []byte {
	t.Helper()
	rule := byKind(objs, "PrometheusRule", "profilekit")
	if rule == nil {
		t.Fatalf("%s: no PrometheusRule profilekit", where)
	}
	data, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var rulesFound = regexp.MustCompile(`SUCCESS: (\d+) rules found`)

// TestAlertRulesCheck runs promtool check rules on every rule file the chart
// and the kustomization ship: each parses, and holds every alert.
func TestAlertRulesCheck(t *testing.T) {
	want := len(alertRules(t, readFile(t, chartRulesFile)))
	files := shippedRuleFiles(t)
	for _, where := range slices.Sorted(maps.Keys(files)) {
		path := files[where]
		out, err := testenv.RunPromtool("", "check", "rules", path)
		if err != nil {
			t.Errorf("%s: %v\n%s", where, err, out)
			continue
		}
		m := rulesFound.FindStringSubmatch(out)
		if m == nil || m[1] != strconv.Itoa(want) {
			t.Errorf("%s: promtool found not %d rules:\n%s", where, want, out)
		}
		t.Logf("%s: %s", where, strings.TrimSpace(out))
	}
}

// TestAlertRulesUnitTests runs the alerts' unit tests with promtool test
// rules, and checks that every alert has a case where it fires and one where
// it does not.
func TestAlertRulesUnitTests(t *testing.T) {
	out, err := testenv.RunPromtool(".", "test", "rules", rulesTestFile)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("promtool test rules %s:\n%s", rulesTestFile, out)

	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Name  string `json:"name"`
			Cases []struct {
				Alert     string `json:"alertname"`
				ExpAlerts []struct {
					Labels      map[string]string `json:"exp_labels"`
					Annotations map[string]string `json:"exp_annotations"`
				} `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(readFile(t, rulesTestFile), &tests); err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join("..", "..", "deploy", "helm", "profilekit", "files", "prometheus-rules.yaml")}; !slices.Equal(tests.RuleFiles, want) {
		t.Errorf("%s tests %v, want the chart's rules %v", rulesTestFile, tests.RuleFiles, want)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tg := range tests.Tests {
		for _, c := range tg.Cases {
			if len(c.ExpAlerts) == 0 {
				quiet[c.Alert] = true
			}
			for _, a := range c.ExpAlerts {
				// promtool compares every label and annotation; the
				// severity and both texts must be there.
				if a.Labels["severity"] == "" || a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
					t.Errorf("%s: %s fires without its severity, summary and description", tg.Name, c.Alert)
				}
				fires[c.Alert] = true
			}
		}
	}
	for _, r := range alertRules(t, readFile(t, chartRulesFile)) {
		if !fires[r.Alert] {
			t.Errorf("%s has no case where %s fires", rulesTestFile, r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s has no case where %s does not fire", rulesTestFile, r.Alert)
		}
	}
}
