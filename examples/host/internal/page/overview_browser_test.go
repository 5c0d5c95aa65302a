package page_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestOverviewInBrowser opens the admin overview in headless Chromium as an
// administrator, searches with its form (no script: the browser submits
// it), and as a tenant, who is refused. It saves a screenshot to
// docs/page-overview.png with -page.screenshot (the tenant page's flag),
// else to a temporary folder:
//
//	go test ./examples/host/internal/page -run TestOverviewInBrowser -args -page.screenshot
func TestOverviewInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run make chromium (make test does), or apt-get install chromium")
	}
	ctx := t.Context()
	viewClusterRole(t)
	admins(t, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "platform-admins"})
	lab, hostNS := "vision-"+rand.String(4), "host-"+rand.String(5)
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNS}}))

	// A platform on a bad night: Azure times out for one team, a contributor
	// entry is refused, a budget is used up.
	var names []string
	add := func(p *kubeflowv1.Profile) { names = append(names, p.Name) }
	for _, who := range []string{"ada", "grace", "edsger", "barbara", "ken"} {
		add(profile(t, "nlp-"+who, who+"@example.org", map[string]string{"team": "nlp"}, ready("CoreReady", "QuotasReady", "NetworkReady", "ContributorsReady")...))
	}
	add(profile(t, "vision-alan", "alan@example.org", map[string]string{"team": "vision", "lab": lab},
		kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "AzureBlobError: BlobcsiReady is False: AzureBlob: create container vision-alan-data: context deadline exceeded"},
		kubeflowv1.ProfileCondition{Type: "CoreReady", Status: "True", Message: "Applied: 6 objects in sync"},
		kubeflowv1.ProfileCondition{Type: "BlobcsiReady", Status: "False", Message: "AzureBlobError: AzureBlob: create container vision-alan-data: context deadline exceeded"}))
	add(profile(t, "vision-hedy", "hedy@example.org", map[string]string{"team": "vision", "lab": lab},
		kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "InvalidSpec: ContributorsReady is False: entry 1 (User bob): role admin is not allowed"},
		kubeflowv1.ProfileCondition{Type: "CoreReady", Status: "True", Message: "Applied: 6 objects in sync"},
		kubeflowv1.ProfileCondition{Type: "ContributorsReady", Status: "False", Message: "InvalidSpec: entry 1 (User bob): role admin is not allowed on this cluster; use edit or view"},
		kubeflowv1.ProfileCondition{Type: "BudgetsReady", Status: "Unknown", Message: "Waiting: waiting for headroom in budget " + lab + " for requests.nvidia.com/gpu: nothing is free and no other member has any to give (requests.nvidia.com/gpu share 0, used 0)"}))
	add(profile(t, "vision-margaret", "margaret@example.org", map[string]string{"team": "vision", "lab": lab},
		kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "Pending: QuotasReady has not been reported yet"},
		kubeflowv1.ProfileCondition{Type: "CoreReady", Status: "True", Message: "Applied: 6 objects in sync"}))
	// The lab's first member holds every GPU; each uses all it holds.
	for i, p := range names[5:] {
		must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p}}))
		gpus := "0"
		if i == 0 {
			gpus = "4"
		}
		hard := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse(gpus), corev1.ResourceRequestsCPU: resource.MustParse("8")}
		share(t, p, lab, hard, hard)
	}
	// Halfway: the second batch reached the Profiles of the lower half of
	// the keys.
	must(t, env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName, Namespace: hostNS, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}},
		Data: map[string]string{"stableRevision": "3f2a9c41d0", "stable": `{"quotas":{"enabled":"all"}}`, "candidateRevision": "8e51b7a2c4",
			"started": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano), "batches": "2", "from": "3fffffffffffffff", "to": "7fffffffffffffff", "paused": "false"}}))

	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "profilekit_outside_calls_total"}, []string{"plugin", "system", "result"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "profilekit_outside_call_duration_seconds"}, []string{"plugin", "system"})
	reg.MustRegister(calls, seconds)
	for _, c := range []struct {
		plugin, system      string
		ok, errors, timeout float64
		took                time.Duration
	}{
		{"blobcsi", "AzureBlob", 412, 3, 19, 850 * time.Millisecond},
		{"gitea", "PostgreSQL", 1208, 0, 0, 12 * time.Millisecond},
		{"irsa", "AWSIAM", 96, 1, 0, 140 * time.Millisecond},
	} {
		calls.WithLabelValues(c.plugin, c.system, "ok").Add(c.ok)
		calls.WithLabelValues(c.plugin, c.system, "error").Add(c.errors)
		calls.WithLabelValues(c.plugin, c.system, "timeout").Add(c.timeout)
		seconds.WithLabelValues(c.plugin, c.system).Observe(c.took.Seconds())
	}
	h := hostOn(t, env.Config, page.OverviewOptions{
		GrafanaURL: "https://grafana.example.org/d/profilekit/profilekit", RolloutNamespace: hostNS, Metrics: reg,
		Sections: map[string]hostconfig.Plugin{"quotas": {Enabled: hostconfig.EnabledAll, Defaults: []byte(`{"hard":{"requests.cpu":"8"}}`)}},
		Budgets: []budgets.Budget{{Name: lab, ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"lab": lab}},
			Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceRequestsCPU: resource.MustParse("32")}}},
	})
	eventually(t, h, "/overview", "root@example.org", "platform-admins", append(names, "waits for headroom")...)

	mux := http.NewServeMux()
	for prefix, user := range map[string]string{"/admin": "root@example.org", "/tenant": "ada@example.org"} {
		mux.Handle(prefix+"/", http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set("kubeflow-userid", "accounts.example.org:"+user)
			r.Header.Set("kubeflow-groups", map[string]string{"/admin": "platform-admins", "/tenant": "nlp"}[prefix])
			h.ServeHTTP(w, r)
		})))
	}
	gw := httptest.NewServer(mux)
	defer gw.Close()
	alloc, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(gw.URL+"/admin/overview"), chromedp.WaitVisible(chromedp.ID("list"))); err != nil {
		t.Fatalf("open the overview: %v", err)
	}
	// Failing first; other tests' Profiles may be in the list too.
	states, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list tbody tr"), r => r.className)`))
	must(t, err)
	rank := map[string]int{"failing": 0, "pending": 1, "ready": 2}
	if len(states) == 0 || states[0] != "failing" || !slices.IsSortedFunc(states, func(a, b string) int { return rank[a] - rank[b] }) {
		t.Errorf("rows in the states %v, want the failing ones first, then those not ready yet", states)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := filepath.Join(t.TempDir(), "page-overview.png")
	if *screenshot {
		out = filepath.Join(testenv.RepoRoot(), "docs", "page-overview.png")
	}
	must(t, os.WriteFile(out, png, 0o644))
	t.Logf("screenshot of the admin overview: %s (%d bytes)", out, len(png))

	// The search form, submitted by the browser.
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("q"), names[6]), chromedp.Submit(chromedp.ID("filter"))); err != nil {
		t.Fatalf("search: %v", err)
	}
	var loc string
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(loc, "q=") && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		loc, err = chromedp.Run(bctx, chromedp.Location())
		must(t, err)
	}
	must(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("matched"))))
	if got := text("#matched"); got != "1" || !strings.Contains(loc, "q="+names[6]) {
		t.Errorf("after a search for %s: %s Profiles at %s, want 1", names[6], got, loc)
	}

	if err := chromedp.Do(bctx, chromedp.Navigate(gw.URL+"/tenant/overview"), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("open the overview as a tenant: %v", err)
	}
	if body := text("body"); !strings.Contains(body, "for platform administrators") || strings.Contains(body, names[0]) {
		t.Errorf("a tenant sees %q, want the refusal and no Profile", body)
	}
}
