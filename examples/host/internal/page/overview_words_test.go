package page

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

func cond(t, status, msg string) kubeflowv1.ProfileCondition {
	return kubeflowv1.ProfileCondition{Type: t, Status: status, Message: msg}
}

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		reason string
		conds  []kubeflowv1.ProfileCondition
		want   string
	}{
		{"no condition yet: nothing has reported", nil, statePending},
		{"every plugin True and Ready", []kubeflowv1.ProfileCondition{cond("QuotasReady", "True", "Applied"), cond("Ready", "True", "PluginsReady")}, stateReady},
		{"one plugin False fails the Profile, whatever Ready says", []kubeflowv1.ProfileCondition{cond("Ready", "True", ""), cond("NetworkReady", "False", "ApplyFailed: x")}, stateFailing},
		{"a plugin that waits leaves it pending", []kubeflowv1.ProfileCondition{cond("BudgetsReady", "Unknown", "Waiting: waiting for x"), cond("Ready", "False", "Waiting: budgets is Unknown")}, statePending},
		{"Ready False with no plugin False is pending: a plugin has not reported", []kubeflowv1.ProfileCondition{cond("Ready", "False", "Pending: QuotasReady has not been reported yet")}, statePending},
	} {
		if got := stateOf(tc.conds); got != tc.want {
			t.Errorf("%s: stateOf = %s, want %s", tc.reason, got, tc.want)
		}
	}
}

func TestFilterKeeps(t *testing.T) {
	failing := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "vision-a", Labels: map[string]string{"team": "vision"}},
		Status: kubeflowv1.ProfileStatus{Conditions: []kubeflowv1.ProfileCondition{
			cond("QuotasReady", "True", "Applied"), cond("NetworkReady", "False", "ApplyFailed: the API server timed out")}}}
	failing.Spec.Owner.Name = "alice@example.org"
	for _, tc := range []struct {
		reason, query string
		want          bool
		problem       string
	}{
		{reason: "no filter keeps everything", query: "", want: true},
		{reason: "its state", query: "state=failing", want: true},
		{reason: "another state", query: "state=ready", want: false},
		{reason: "a plugin's own state: quotas is ready on it", query: "plugin=quotas&state=ready", want: true},
		{reason: "a plugin's own state: network fails on it", query: "plugin=network&state=failing", want: true},
		{reason: "a plugin that does not report on it", query: "plugin=budgets", want: false},
		{reason: "a search in a message, ignoring case", query: "q=TIMED+OUT", want: true},
		{reason: "a search by owner", query: "q=alice", want: true},
		{reason: "a search by label", query: "q=team%3Dvision", want: true},
		{reason: "a search by a plugin's title", query: "q=network+policies", want: true},
		{reason: "a search that is nowhere", query: "q=bob", want: false},
		{reason: "a selector that selects it", query: "selector=team+in+(vision,nlp)", want: true},
		{reason: "a selector that does not", query: "selector=team%3Dnlp", want: false},
		{reason: "a selector that does not parse matches nothing and says why", query: "selector=team%3D%3D%3D", want: false, problem: "selector: "},
		{reason: "an unknown state matches nothing and says why", query: "state=broken", want: false, problem: "state: want failing, pending or ready"},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		f := parseFilter(q)
		if got := f.keeps(failing, stateOf(failing.Status.Conditions)); got != tc.want {
			t.Errorf("%s: %q keeps = %v, want %v", tc.reason, tc.query, got, tc.want)
		}
		if tc.problem != "" && (len(f.Problem) < len(tc.problem) || f.Problem[:len(tc.problem)] != tc.problem) {
			t.Errorf("%s: problem %q, want %q...", tc.reason, f.Problem, tc.problem)
		}
	}
}

func TestFilterURL(t *testing.T) {
	f := parseFilter(url.Values{"q": {"a&b"}, "state": {"failing"}, "page": {"3"}})
	if got, want := f.URL(4), "overview?page=4&q=a%26b&state=failing"; got != want {
		t.Errorf("URL(4) = %s, want %s", got, want)
	}
	if got, want := (filter{}).URL(1), "overview"; got != want {
		t.Errorf("no filter's URL(1) = %s, want %s", got, want)
	}
}

// TestBlocked reads the budgets plugin's conditions as it writes them
// (plugins/budgets plugin.go and its tests).
func TestBlocked(t *testing.T) {
	for _, tc := range []struct {
		reason string
		c      *kubeflowv1.ProfileCondition
		budget string
		want   string
	}{
		{"no condition", nil, "vision", ""},
		{"in good standing", &kubeflowv1.ProfileCondition{Type: "BudgetsReady", Status: "True", Message: "Applied: 1 object in sync"}, "vision", ""},
		{"asked and got nothing", &kubeflowv1.ProfileCondition{Status: "Unknown",
			Message: "Waiting: waiting for headroom in budget vision for requests.cpu: nothing is free and no other member has any to give (requests.cpu share 0, used 0)"}, "vision", "waits for headroom"},
		{"another budget's wait", &kubeflowv1.ProfileCondition{Status: "Unknown",
			Message: "Waiting: waiting for headroom in budget vision-lab for requests.cpu: nothing is free (requests.cpu share 0, used 0)"}, "vision", ""},
		{"over its own share", &kubeflowv1.ProfileCondition{Status: "Unknown",
			Message: "Waiting: waiting for use in budget vision to drop under this member's share: new pods are refused until then (requests.cpu share 2, used 2100m)"}, "vision", "uses more than its share"},
		{"the budget is over", &kubeflowv1.ProfileCondition{Status: "False",
			Message: "OverBudget: budget vision is over: members hold requests.cpu 5 of 4; nothing is evicted, and new pods are refused until use drops (requests.cpu share 2, used 2)"}, "vision", "the budget is over"},
		{"a conflict is no wait", &kubeflowv1.ProfileCondition{Status: "False",
			Message: "Conflict: ResourceQuota ns/profilekit-budget-vision exists and is not profilekit's; budget vision cannot bind this Profile"}, "vision", ""},
	} {
		if got := blocked(tc.c, tc.budget); got != tc.want {
			t.Errorf("%s: blocked = %q, want %q", tc.reason, got, tc.want)
		}
	}
}

func TestSumResource(t *testing.T) {
	quota := func(share, enforced, used string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(share)}},
			Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(enforced)}, Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(used)}},
		}
	}
	got := sumResource(corev1.ResourceRequestsCPU, resource.MustParse("4"), []*corev1.ResourceQuota{
		quota("1", "1", "500m"),
		// A share lowered that the quota controller still enforces at 2.
		quota("1", "2", "1"),
		// Use beyond the share (an over-admission): it holds its use.
		quota("500m", "500m", "700m"),
	})
	want := budgetResource{Resource: "requests.cpu", Hard: "4", Shares: "2500m", Used: "2200m", Free: "300m",
		HardValue: 4000, SharesValue: 2500, UsedValue: 2200, HighValue: 3600}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sumResource (-want +got):\n%s", diff)
	}
	over := sumResource(corev1.ResourceRequestsCPU, resource.MustParse("1"), []*corev1.ResourceQuota{quota("1", "1", "1500m")})
	if !over.Over || over.Free != "-500m" {
		t.Errorf("a member over the budget: Over %v, Free %s; want true, -500m", over.Over, over.Free)
	}
}

// TestOutsideRates: the error rate since the start, and over the window
// once a sample is old enough; the recent failures come first.
func TestOutsideRates(t *testing.T) {
	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: callsMetric}, []string{"plugin", "system", "result"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: durationMetric}, []string{"plugin", "system"})
	reg.MustRegister(calls, seconds)
	calls.WithLabelValues("blobcsi", "azure-blob", "ok").Add(90)
	calls.WithLabelValues("blobcsi", "azure-blob", "error").Add(8)
	calls.WithLabelValues("blobcsi", "azure-blob", "timeout").Add(2)
	calls.WithLabelValues("gitea", "postgresql", "ok").Add(50)
	seconds.WithLabelValues("gitea", "postgresql").Observe(0.2)
	seconds.WithLabelValues("gitea", "postgresql").Observe(0.4)
	o := &Overview{opts: OverviewOptions{Metrics: reg}, rates: &rates{}}

	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	first := o.outside(t0)
	if first.Window != "" {
		t.Errorf("window %q on the first view, want none", first.Window)
	}
	want := []outsideRow{
		{Plugin: "blobcsi", System: "azure-blob", Calls: 100, Errors: 8, Timeouts: 2, Rate: "10.0%", RecentRate: "—", Failing: true},
		{Plugin: "gitea", System: "postgresql", Calls: 50, Rate: "0.0%", RecentRate: "—", Mean: "300ms"},
	}
	if diff := cmp.Diff(want, first.Rows); diff != "" {
		t.Errorf("first view (-want +got):\n%s", diff)
	}

	// Azure recovers; PostgreSQL starts failing.
	for i, at := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute} {
		calls.WithLabelValues("blobcsi", "azure-blob", "ok").Add(10)
		if i == 3 {
			calls.WithLabelValues("gitea", "postgresql", "error").Add(5)
			calls.WithLabelValues("gitea", "postgresql", "ok").Add(15)
		}
		o.sample(t0.Add(at))
	}
	later := o.outside(t0.Add(6 * time.Minute))
	if later.Window != "5 min" {
		t.Errorf("window %q, want 5 min (from the sample at 1m)", later.Window)
	}
	want = []outsideRow{
		{Plugin: "gitea", System: "postgresql", Calls: 70, Errors: 5, Rate: "7.1%", RecentCalls: 20, RecentFailed: 5, RecentRate: "25.0%", Mean: "300ms", Failing: true},
		{Plugin: "blobcsi", System: "azure-blob", Calls: 140, Errors: 8, Timeouts: 2, Rate: "7.1%", RecentCalls: 20, RecentRate: "0.0%"},
	}
	if diff := cmp.Diff(want, later.Rows); diff != "" {
		t.Errorf("six minutes later (-want +got):\n%s", diff)
	}
}

func TestRatesKeepAndBase(t *testing.T) {
	r := &rates{}
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	r.add(t0, nil)
	r.add(t0.Add(5*time.Second), nil) // too soon: not kept
	if len(r.samples) != 1 {
		t.Fatalf("%d samples, want 1: a sample within %s of the last is not kept", len(r.samples), sampleGap)
	}
	if _, ok := r.base(t0.Add(59 * time.Second)); ok {
		t.Error("a base younger than a minute")
	}
	for at := 30 * time.Second; at <= 20*time.Minute; at += 30 * time.Second {
		r.add(t0.Add(at), nil)
	}
	if oldest := t0.Add(20 * time.Minute).Sub(r.samples[0].at); oldest > sampleKept {
		t.Errorf("a sample %s old is kept, want at most %s", oldest, sampleKept)
	}
	b, ok := r.base(t0.Add(20 * time.Minute))
	if !ok || b.at != t0.Add(15*time.Minute) {
		t.Errorf("base at %s (%v), want the newest sample at least %s old, %s", b.at, ok, recentWindow, t0.Add(15*time.Minute))
	}
}

// TestOutsideStandby: a replica that does not lead says that the leader
// makes the outside calls, until it leads.
func TestOutsideStandby(t *testing.T) {
	elected := make(chan struct{})
	o := &Overview{opts: OverviewOptions{Metrics: prometheus.NewRegistry(), Elected: elected}, rates: &rates{}}
	if v := o.outside(time.Now()); !v.Standby {
		t.Error("a replica waiting for the Lease does not say it is on standby")
	}
	close(elected)
	if v := o.outside(time.Now()); v.Standby {
		t.Error("the leader says it is on standby")
	}
}
