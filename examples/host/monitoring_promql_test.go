package main

// This file reads the dashboard's and the alert rules' PromQL with
// Prometheus's own parser: which series each expression selects, and which
// labels it reads from them. The parser's module is required at v0.311.3,
// the newest release whose requirements leave the versions of this module's
// other dependencies as they are.

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// promql parses expressions as a Prometheus without feature flags does: no
// experimental functions or syntax.
var promql = parser.NewParser(parser.Options{})

// selectorUse is one series selector of an expression, and the labels the
// expression reads from the series it selects: the selector's own
// matchers, the groupings and vector matchings above it, and the labels
// that the panel's legend or the alert's annotations print.
type selectorUse struct {
	Metric   string
	Matchers []*labels.Matcher
	Labels   []string
}

// grafanaVar matches a Grafana variable: $name, ${name} or [[name]].
var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// expandGrafana replaces the Grafana variables in expr with vars' values,
// and fails on a variable vars does not hold.
func expandGrafana(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVar.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown Grafana variables %v in %s", missing, expr)
	}
	return out, nil
}

// templateLabel matches a label printed by a Grafana legend ({{name}}) or
// an alert template ({{ $labels.name }}).
var templateLabel = regexp.MustCompile(`\{\{\s*(?:\$labels\.)?([a-zA-Z_]\w*)\s*(?:\||\}\})`)

// templateLabels returns the labels the templates print, without $value.
func templateLabels(templates ...string) []string {
	var out []string
	for _, s := range templates {
		for _, m := range templateLabel.FindAllStringSubmatch(s, -1) {
			if m[1] != "value" {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// selectorUses parses expr (with its Grafana variables already expanded)
// and returns its series selectors, each with the labels the expression
// reads from it plus printed. A Grafana label_values(selector, label)
// query reads label from its selector.
func selectorUses(expr string, printed []string) ([]selectorUse, error) {
	if inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		i := strings.LastIndex(inner, ",")
		if i < 0 || !strings.HasSuffix(inner, ")") {
			return nil, fmt.Errorf("label_values without a label: %s", expr)
		}
		expr = inner[:i]
		printed = append(slices.Clone(printed), strings.TrimSpace(strings.TrimSuffix(inner[i+1:], ")")))
	}
	parsed, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var uses []selectorUse
	parser.Inspect(parsed, func(node parser.Node, path []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			err = fmt.Errorf("%s does not name one metric", vs)
			return err
		}
		read := map[string]bool{}
		for _, l := range printed {
			read[l] = true
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				read[m.Name] = true
			}
		}
		for _, n := range path {
			switch n := n.(type) {
			case *parser.AggregateExpr:
				if !n.Without {
					for _, l := range n.Grouping {
						read[l] = true
					}
				}
			case *parser.BinaryExpr:
				if vm := n.VectorMatching; vm != nil && vm.On {
					for _, l := range append(slices.Clone(vm.MatchingLabels), vm.Include...) {
						read[l] = true
					}
				}
			}
		}
		uses = append(uses, selectorUse{Metric: name, Matchers: vs.LabelMatchers, Labels: slices.Sorted(maps.Keys(read))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(uses) == 0 {
		return nil, fmt.Errorf("selects no series: %s", expr)
	}
	return uses, nil
}

// metricNames returns the metric names expr selects, sorted.
func metricNames(expr string) ([]string, error) {
	uses, err := selectorUses(expr, nil)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, u := range uses {
		names[u.Metric] = true
	}
	return slices.Sorted(maps.Keys(names)), nil
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		reason, expr string
		want         []string
	}{
		{"a bare selector", `up`, []string{"up"}},
		{"functions and aggregations are not metrics, their arguments are",
			`sum by (controller, result) (rate(controller_runtime_reconcile_total{controller=~"profilekit-.+"}[5m]))`,
			[]string{"controller_runtime_reconcile_total"}},
		{"a histogram's bucket series, numbers and grouping labels",
			`histogram_quantile(0.95, sum by (plugin, le) (rate(profilekit_plugin_pass_duration_seconds_bucket{job=~"x"}[5m]))) > 1e1`,
			[]string{"profilekit_plugin_pass_duration_seconds_bucket"}},
		{"both sides of a binary operation, not the on() labels",
			"sum by (ns) (rate(a_total[15m])) / on (ns) group_left (x) sum by (ns) (rate(b_total[15m])) > 0.1 and c",
			[]string{"a_total", "b_total", "c"}},
		{"strings hold braces and words",
			`label_replace(x_total, "dst", "$1 {by}", "src", "(.*)") unless y offset 5m`,
			[]string{"x_total", "y"}},
		{"a Grafana label_values query counts its selector, not the label",
			`label_values(controller_runtime_reconcile_total{controller=~"profilekit-.+", job=~".+"}, namespace)`,
			[]string{"controller_runtime_reconcile_total"}},
		{"a selector by __name__ only", `absent({__name__="z", a="b"})`, []string{"z"}},
	} {
		got, err := metricNames(tc.expr)
		if err != nil {
			t.Errorf("%s: %s: %v", tc.reason, tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: %s (-want +got):\n%s", tc.reason, tc.expr, diff)
		}
	}
	for _, expr := range []string{`sum(rate(x[5m])`, `rate(x[$__rate_interval])`, `sum by (a) 1`, `label_values(up)`, `vector(1)`, `{__name__=~"a|b"}`} {
		if got, err := metricNames(expr); err == nil {
			t.Errorf("%s: no error, metrics %v", expr, got)
		}
	}
}

func TestSelectorUses(t *testing.T) {
	uses, err := selectorUses(
		`sum by (namespace, controller) (rate(errors_total{controller=~"p-.+"}[15m])) / on (namespace) group_left (pod) max without (le) (total{result!="ok"})`,
		templateLabels(`{{ $labels.controller }} fails {{ $value | humanizePercentage }} on {{instance}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range uses {
		got = append(got, u.Metric+" "+strings.Join(u.Labels, ","))
	}
	want := []string{
		"errors_total controller,instance,namespace,pod",
		"total controller,instance,namespace,pod,result",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("selectors and the labels read from them (-want +got):\n%s", diff)
	}
}

func TestExpandGrafana(t *testing.T) {
	vars := map[string]string{"job": "profilekit-metrics", "__rate_interval": "1m"}
	got, err := expandGrafana(`rate(x{job=~"$job", a="${job}", b="[[job]]"}[$__rate_interval])`, vars)
	if want := `rate(x{job=~"profilekit-metrics", a="profilekit-metrics", b="profilekit-metrics"}[1m])`; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := expandGrafana(`x{a="$unknown"}`, vars); err == nil {
		t.Error("an unknown variable expanded")
	}
}

// monitoringQuery is one query of the dashboard (a panel's target, a
// variable) or of the alert rules.
type monitoringQuery struct {
	Where string
	// Expr is the query as written, Grafana variables unexpanded.
	Expr string
	// Printed are the labels the panel's legend or the alert's annotations
	// print.
	Printed []string
}

// monitoringQueries returns every query of the dashboard's panels and
// variables and of the alert rules.
func monitoringQueries(t *testing.T) []monitoringQuery {
	t.Helper()
	var queries []monitoringQuery
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readFile(t, monitoringDir+"/grafana-dashboard.json"), &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries = append(queries, monitoringQuery{"panel " + p.Title, tg.Expr, templateLabels(tg.LegendFormat)})
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		queries = append(queries, monitoringQuery{Where: "variable " + v.Name, Expr: q})
	}
	for _, r := range alertRules(t, readFile(t, chartRulesFile)) {
		queries = append(queries, monitoringQuery{"alert " + r.Alert, r.Expr, templateLabels(slices.Collect(maps.Values(r.Annotations))...)})
	}
	return queries
}

// monitoringMetrics returns every metric name the dashboard and the alert
// rules select, with where each is used. vars holds the values of the
// dashboard's variables.
func monitoringMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	vars := map[string]string{"job": ".+", "namespace": ".+", "__rate_interval": "5m"}
	for _, q := range monitoringQueries(t) {
		expr, err := expandGrafana(q.Expr, vars)
		if err == nil {
			var names []string
			if names, err = metricNames(expr); err == nil {
				for _, n := range names {
					used[n] = append(used[n], q.Where)
				}
			}
		}
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
		}
	}
	if len(used) < 10 {
		t.Fatalf("only %d metrics found in the dashboard and the rules: %v", len(used), used)
	}
	return used
}
