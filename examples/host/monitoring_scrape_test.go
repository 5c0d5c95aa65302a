package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
)

// scrapeJob is the job of the host's target: the Prometheus Operator names
// a ServiceMonitor's jobs after the Service, profilekit-metrics.
const scrapeJob = "profilekit-metrics"

// seriesCheck is a series selector that a scrape of the host must match,
// and the labels its series must carry.
type seriesCheck struct {
	where    []string
	selector string
	labels   []string
}

// seriesChecks returns, for every selector of the dashboard and the alert
// rules, the series a healthy host must have: the selector with its
// positive matchers (a negative one, such as result!="ok", selects series
// a healthy host may lack), and the labels the query reads from them. vars
// holds the dashboard's variables.
func seriesChecks(t *testing.T, queries []monitoringQuery, vars map[string]string) []seriesCheck {
	t.Helper()
	bySelector := map[string]*seriesCheck{}
	for _, q := range queries {
		expr, err := expandGrafana(q.Expr, vars)
		if err != nil {
			t.Fatalf("%s: %v", q.Where, err)
		}
		uses, err := selectorUses(expr, q.Printed)
		if err != nil {
			t.Fatalf("%s: %v", q.Where, err)
		}
		for _, u := range uses {
			var ms []string
			for _, m := range u.Matchers {
				if m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp {
					ms = append(ms, m.String())
				}
			}
			sel := "{" + strings.Join(slices.Sorted(slices.Values(ms)), ", ") + "}"
			key := sel + " " + strings.Join(u.Labels, ",")
			c := bySelector[key]
			if c == nil {
				c = &seriesCheck{selector: sel, labels: u.Labels}
				bySelector[key] = c
			}
			c.where = append(c.where, q.Where)
		}
	}
	var out []seriesCheck
	for _, k := range slices.Sorted(maps.Keys(bySelector)) {
		out = append(out, *bySelector[k])
	}
	return out
}

// promAPI gets a Prometheus HTTP API path and decodes its data into out.
func promAPI(base, path string, params url.Values, out any) error {
	resp, err := http.Get(base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, params.Encode(), body.Error)
	}
	return json.Unmarshal(body.Data, out)
}

// unmatched returns what a Prometheus at base lacks of c: no series, or
// series without some of the labels c reads.
func unmatched(base string, c seriesCheck) string {
	var series []map[string]string
	if err := promAPI(base, "/api/v1/series", url.Values{"match[]": {c.selector}}, &series); err != nil {
		return err.Error()
	}
	if len(series) == 0 {
		return fmt.Sprintf("no series match %s (in %s)", c.selector, strings.Join(c.where, "; "))
	}
	var missing []string
	for _, l := range c.labels {
		if !slices.ContainsFunc(series, func(s map[string]string) bool { return s[l] != "" }) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("the series of %s lack the labels %v (in %s): %v", c.selector, missing, strings.Join(c.where, "; "), series[0])
	}
	return ""
}

// checkPrometheusScrape has a real Prometheus scrape the host's metrics at
// metricsAddr with the target labels that the chart's ServiceMonitor gives
// (job, namespace, pod, service), waits until every selector of the
// dashboard and the alert rules matches series with the labels the query
// reads, then evaluates every query and checks that the alerts for a
// missing host and a missing leader are quiet.
func checkPrometheusScrape(t *testing.T, metricsAddr string) {
	t.Helper()
	prom, err := testenv.StartPrometheus(testenv.ScrapeTarget{Job: scrapeJob, Address: metricsAddr, Labels: map[string]string{
		"namespace": hostNamespace, "pod": "profilekit-0", "service": scrapeJob, "endpoint": "metrics", "container": "profilekit",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Close() })

	queries := monitoringQueries(t)
	vars := map[string]string{"job": scrapeJob, "namespace": hostNamespace, "__rate_interval": "1m"}
	checks := seriesChecks(t, queries, vars)
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		var problems []string
		for _, c := range checks {
			if p := unmatched(prom.URL, c); p != "" {
				problems = append(problems, p)
			}
		}
		if len(problems) > 0 {
			var targets struct {
				Active []struct {
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"activeTargets"`
			}
			if err := promAPI(prom.URL, "/api/v1/targets", nil, &targets); err == nil && len(targets.Active) == 1 {
				problems = append(problems, fmt.Sprintf("the host's target is %q %s", targets.Active[0].Health, targets.Active[0].LastError))
			}
		}
		return len(problems) == 0, "Prometheus's scrape of the host:\n" + strings.Join(problems, "\n")
	})
	t.Logf("Prometheus scraped the host: the %d selectors of %d queries of the dashboard and the alert rules match series with the labels they read", len(checks), len(queries))

	for _, q := range queries {
		if strings.HasPrefix(q.Where, "variable ") {
			continue // label_values is Grafana's, not PromQL
		}
		expr, _ := expandGrafana(q.Expr, vars)
		var result struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		}
		if err := promAPI(prom.URL, "/api/v1/query", url.Values{"query": {expr}}, &result); err != nil {
			t.Errorf("%s: Prometheus does not evaluate %s: %v", q.Where, expr, err)
			continue
		}
		quiet := q.Where == "alert ProfilekitAbsent" || q.Where == "alert ProfilekitNoLeader"
		if quiet && len(result.Result) > 0 {
			t.Errorf("%s would fire on a running host that leads: %v", q.Where, result.Result)
		}
	}
}
