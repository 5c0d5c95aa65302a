package main

// This file holds how the monitoring tests read the metric names out of a
// PromQL expression, and the test of it.

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// promqlKeywords are the words of PromQL that are not metric names.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true,
}

// metricNames returns the metric names a PromQL expression selects, sorted:
// every identifier that is not a keyword, a function or an aggregation (one
// followed by an opening parenthesis or a grouping), once strings, label
// matchers, ranges and grouping label lists are taken out. A Grafana label_values(selector,
// label) query counts its selector.
func metricNames(expr string) []string {
	if inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		if i := strings.LastIndex(inner, ","); i >= 0 {
			expr = inner[:i]
		}
	}
	var b strings.Builder
	// Strings first, since they may hold any of the characters below.
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c == '"' || c == '\'' || c == '`' {
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' && c != '`' {
					i++
				}
			}
			b.WriteString(`""`)
			continue
		}
		b.WriteByte(c)
	}
	s := b.String()
	for _, pair := range [][2]byte{{'{', '}'}, {'[', ']'}} {
		s = cutBetween(s, pair[0], pair[1])
	}
	names := map[string]bool{}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration: 0.95, 1e3, 5m.
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			rest := strings.TrimLeft(s[j:], " \t\n")
			i = j
			if promqlKeywords[strings.ToLower(word)] {
				if word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right" {
					// Its label list, when it has one.
					if strings.HasPrefix(rest, "(") {
						i = len(s) - len(rest) + strings.IndexByte(rest, ')') + 1
					}
				}
				continue
			}
			// A call, or an aggregation with its grouping first: sum by (x) (...).
			call := strings.HasPrefix(rest, "(")
			for _, g := range []string{"by", "without"} {
				if after, ok := strings.CutPrefix(rest, g); ok && strings.HasPrefix(strings.TrimLeft(after, " \t\n"), "(") {
					call = true
				}
			}
			if !call {
				names[word] = true
			}
		default:
			i++
		}
	}
	return slices.Sorted(maps.Keys(names))
}

func isIdent(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// cutBetween replaces every opening...closing span of s with a space; PromQL
// does not nest them once strings are gone.
func cutBetween(s string, opening, closing byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != opening {
			b.WriteByte(s[i])
			continue
		}
		for i < len(s) && s[i] != closing {
			i++
		}
		b.WriteByte(' ')
	}
	return b.String()
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		reason, expr string
		want         []string
	}{
		{"a bare selector", `up`, []string{"up"}},
		{"functions and aggregations are not metrics, their arguments are",
			`sum by (controller, result) (rate(controller_runtime_reconcile_total{controller=~"profilekit-.+"}[$__rate_interval]))`,
			[]string{"controller_runtime_reconcile_total"}},
		{"a histogram's bucket series, numbers and grouping labels",
			`histogram_quantile(0.95, sum by (plugin, le) (rate(profilekit_plugin_pass_duration_seconds_bucket{job=~"$job"}[5m]))) > 1e1`,
			[]string{"profilekit_plugin_pass_duration_seconds_bucket"}},
		{"both sides of a binary operation, not the on() labels",
			"sum by (ns) (rate(a_total[15m])) / on (ns) group_left (x) sum by (ns) (rate(b_total[15m])) > 0.1 and c",
			[]string{"a_total", "b_total", "c"}},
		{"strings hold braces and words",
			`label_replace(x_total, "dst", "$1 {by}", "src", "(.*)") unless y offset 5m`,
			[]string{"x_total", "y"}},
		{"a Grafana label_values query counts its selector, not the label",
			`label_values(controller_runtime_reconcile_total{controller=~"profilekit-.+", job=~"$job"}, namespace)`,
			[]string{"controller_runtime_reconcile_total"}},
		{"absent of a selector", `absent(z{a="b"})`, []string{"z"}},
	} {
		if diff := cmp.Diff(tc.want, metricNames(tc.expr)); diff != "" {
			t.Errorf("%s: %s (-want +got):\n%s", tc.reason, tc.expr, diff)
		}
	}
}
