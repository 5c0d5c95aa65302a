package inhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// shown is what the tenant page shows in a browser: each section's rows,
// read from the DOM.
type shown struct {
	Quota   map[string][2]string // resource: used, limit
	Budget  map[string][2]string // resource: share, used
	Plugins map[string]string    // condition type: state and what it says
}

// readShown reads the page's figures from the DOM of the open page.
const readShown = `(() => {
  const rows = (id) => Array.from(document.querySelectorAll("#" + id + " tbody tr")).map(r => Array.from(r.cells).map(c => c.textContent.trim()));
  const out = {Quota: {}, Budget: {}, Plugins: {}};
  for (const r of rows("quota")) out.Quota[r[0]] = [r[1], r[2]];
  for (const r of rows("budget")) out.Budget[r[1]] = [r[2], r[3]];
  for (const r of document.querySelectorAll("#plugins tbody tr")) out.Plugins[r.cells[0].title] = r.cells[1].textContent.trim() + " | " + r.cells[2].textContent.trim();
  return JSON.stringify(out);
})()`

// TestHostFiguresInBrowser runs the host (quotas, budgets with its
// balancer, and the page) on the test control plane with the quota
// controller, and opens the page through a stand-in gateway in headless
// Chromium: the quota's use after pods are created, a budget share after
// the balancer moves it, and a False condition's text equal what the API
// server holds.
func TestHostFiguresInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run make chromium (make test does), or apt-get install chromium")
	}
	ctx := t.Context()
	team := "lab-" + rand.String(5)
	addr := freeAddr(t)
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	must(t, err)
	cfg, err := hostconfig.Parse("host.yaml", fmt.Appendf(nil, `
plugins:
  quotas: {enabled: all, defaults: {hard: {requests.cpu: "3", pods: "10"}}}
  budgets:
    enabled: all
    defaults:
      budgets:
      - {name: %[1]s, profileSelector: {matchLabels: {lab: %[1]s}}, hard: {requests.cpu: "4"}, grant: {requests.cpu: "1"}}
page: {enabled: true, address: %[2]q, userIdPrefix: "accounts.example.org:"}
`, team, addr), reg)
	must(t, err)
	mgr, err := server.NewManager(env.Config, cfg, reg, server.Options{MetricsAddr: "0", ProbeAddr: "0", Logger: logr.Discard(), SkipNameValidation: true})
	must(t, err)
	testhost.Run(t, mgr)

	member := func(prefix string, ps ...kubeflowv1.Plugin) string {
		name := prefix + "-" + rand.String(5)
		testhost.NewProfile(t, env.Client, name, map[string]string{"lab": team}, ps...)
		bindViewer(t, name, testhost.DefaultOwner)
		must(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}))
		return name
	}
	busy, quiet := member("busy"), member("quiet")
	broken := member("broken", kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: quotas.Kind},
		Spec: &runtime.RawExtension{Raw: []byte(`{"hard": {"requests.cpu": "lots"}}`)}})

	// The gateway: the user's header on every request to the page.
	target, err := url.Parse("http://" + addr)
	must(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("kubeflow-userid", "accounts.example.org:"+testhost.DefaultOwner)
		proxy.ServeHTTP(w, r)
	}))
	defer gw.Close()
	alloc, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()

	// open shows ns's page and reads it until want holds of what it shows
	// and what the API server holds, read afresh each time.
	open := func(ns string, want func(shown) (bool, string)) {
		t.Helper()
		var last string
		defer func() { t.Logf("%s: %s", ns, last) }()
		testhost.Eventually(t, 60*time.Second, func() (bool, string) {
			if err := chromedp.Do(bctx, chromedp.Navigate(gw.URL+"/?ns="+ns)); err != nil {
				return false, err.Error()
			}
			raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](readShown))
			if err != nil {
				return false, err.Error()
			}
			var s shown
			if err := json.Unmarshal([]byte(raw), &s); err != nil {
				return false, err.Error()
			}
			ok, msg := want(s)
			last = msg
			return ok, msg
		})
	}
	quotaOf := func(ns, name string) corev1.ResourceQuota {
		var q corev1.ResourceQuota
		must(t, env.Client.Get(ctx, objectKey(ns, name), &q))
		return q
	}
	// equal compares a section's row of resource res with the API
	// server's quota: its spec.hard and status.used.
	equal := func(q corev1.ResourceQuota, res corev1.ResourceName, row [2]string, hardFirst bool) (bool, string) {
		hard, used := q.Spec.Hard[res], q.Status.Used[res]
		want := [2]string{used.String(), hard.String()}
		if hardFirst {
			want = [2]string{hard.String(), used.String()}
		}
		return row == want, fmt.Sprintf("%s %s: the page shows %v, the API server holds %v (spec.hard, status.used: %s, %s)", q.Name, res, row, want, hard.String(), used.String())
	}

	// Pods use the quota: the page shows the use the API server counts.
	for _, cpu := range []string{"500m", "700m"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "train-", Namespace: busy},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.org/train:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			// The budget's share may be 0 until the balancer grants one.
			err := env.Client.Create(ctx, pod)
			return err == nil, fmt.Sprint(err)
		})
	}
	open(busy, func(s shown) (bool, string) {
		q := quotaOf(busy, quotas.DefaultName)
		if used := q.Status.Used[corev1.ResourceRequestsCPU]; used.Cmp(resource.MustParse("1200m")) != 0 {
			return false, "the quota controller has not counted the pods yet: " + used.String()
		}
		return equal(q, corev1.ResourceRequestsCPU, s.Quota["requests.cpu"], false)
	})

	// The balancer moves headroom to the busy member: its share grows
	// past the grant, and the page shows the share the API server holds.
	open(busy, func(s shown) (bool, string) {
		q := quotaOf(busy, budgets.QuotaName(team))
		share := q.Spec.Hard[corev1.ResourceRequestsCPU]
		if share.Cmp(resource.MustParse("1200m")) <= 0 {
			return false, "the balancer has not moved headroom to " + busy + " yet: share " + share.String()
		}
		return equal(q, corev1.ResourceRequestsCPU, s.Budget["requests.cpu"], true)
	})
	open(quiet, func(s shown) (bool, string) {
		return equal(quotaOf(quiet, budgets.QuotaName(team)), corev1.ResourceRequestsCPU, s.Budget["requests.cpu"], true)
	})

	// A False condition: the page says what the Profile's condition says.
	open(broken, func(s shown) (bool, string) {
		var p kubeflowv1.Profile
		must(t, env.Client.Get(ctx, objectKey("", broken), &p))
		i := slices.IndexFunc(p.Status.Conditions, func(c kubeflowv1.ProfileCondition) bool { return c.Type == "QuotasReady" })
		if i < 0 || p.Status.Conditions[i].Status != plugins.ConditionFalse {
			return false, "QuotasReady is not False yet"
		}
		reason, msg, _ := strings.Cut(p.Status.Conditions[i].Message, ": ")
		want := "Not ready (" + reason + ") | " + msg
		return s.Plugins["QuotasReady"] == want, fmt.Sprintf("the page says %q, the condition %q", s.Plugins["QuotasReady"], want)
	})
}
