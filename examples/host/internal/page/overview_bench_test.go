package page_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

var benchProfiles = flag.Int("page.bench.profiles", 10000, "BenchmarkRender: Profiles in the cache for the second set of views (the first has 100)")

// BenchmarkRender measures views of the tenant page (one namespace, with
// its picker) and of the admin overview (its first page, and the failing
// Profiles only) with 100 Profiles in the host's cache, then with
// -page.bench.profiles (10,000), besides the benchmark's tenants (one per
// tenant view measured). One in a hundred Profiles fails a plugin, one in
// fifty waits. The overview reads a budget of 100 members, a rollout's
// state and the process's real metrics registry.
// Each reports the median and 99th percentile of a view, the requests the
// host sent to the API server per view once the user's access is cached
// (counted by a transport around its rest.Config: cache and access
// review alike), and those of the user's first view. Run it with a count of
// views:
//
//	go test ./examples/host/internal/page -run '^$' -bench Render -benchtime 500x -count 3
//
// -count repeats each view on the same Profiles and host; each repetition's
// first view is a new user's.
func BenchmarkRender(b *testing.B) {
	ctx := context.Background() //nolint:forbidigo // the benchmark's setup outlives no test
	var counter testenv.Counter
	hostNS := "bench-host-" + rand.String(4)
	create(b, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNS}})
	create(b, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName, Namespace: hostNS, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}},
		Data: map[string]string{"stableRevision": "3f2a9c41d0", "stable": `{"quotas":{"enabled":"all"}}`, "candidateRevision": "8e51b7a2c4",
			"started": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano), "batches": "1", "from": "0", "to": "3fffffffffffffff", "paused": "false"}})
	admins(b, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "bench-admins"})
	viewPods := "bench-view-" + rand.String(4)
	create(b, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: viewPods},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}})
	fast := rest.CopyConfig(env.Config)
	fast.QPS, fast.Burst = 1000, 2000
	c, err := client.New(fast, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	// The overview's reads of the rollout's ConfigMap, every 10 s whatever
	// the views, are left out of the count: c is not counted.
	h := hostOn(b, counter.Counting(env.Config), page.OverviewOptions{RolloutNamespace: hostNS, Metrics: metrics.Registry, API: c,
		Budgets: []budgets.Budget{{Name: "bench", ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"lab": "bench"}},
			Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("400")}}}})
	// A tenant who owns one namespace, and may list pods there.
	tenant := func(name string) (owner, ns string) {
		owner = name + "@example.org"
		ns = profile(b, name, owner, nil, ready("QuotasReady")...).Name
		create(b, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		create(b, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewPods},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: owner, APIGroup: rbacv1.GroupName}}})
		return owner, ns
	}
	// The process's first views start the cache's informers of the kinds
	// the page reads; a first view of each user after that sends only its
	// access reviews.
	owner, ns := tenant("warm-up")
	waitFor(b, h, "/?ns="+ns, owner, "", `<h1 id="namespace">`+ns+`</h1>`)
	waitFor(b, h, "/overview", "warm-up@example.org", "bench-admins", `id="list"`)
	made := 0
	for _, n := range []int{100, *benchProfiles} {
		makeProfiles(ctx, b, c, made, n-made)
		made = n
		var all kubeflowv1.ProfileList
		if err := c.List(ctx, &all); err != nil {
			b.Fatal(err)
		}
		waitFor(b, h, "/overview?q=none", "warm-up@example.org", "bench-admins", fmt.Sprintf("All <strong>%d</strong>", len(all.Items)))
		for _, name := range []string{"tenant", "overview", "overview-failing"} {
			b.Run(fmt.Sprintf("%s/profiles=%d", name, n), func(b *testing.B) {
				// A new user each time (-count repeats this on the same
				// host), so that the first view's reviews are counted.
				user, groups, target := "admin-"+rand.String(6)+"@example.org", "bench-admins", "/overview"
				switch name {
				case "tenant":
					var ns string
					user, ns = tenant("tenant-" + rand.String(6))
					groups, target = "", "/?ns="+ns
					waitFor(b, h, "/overview?q="+ns, "warm-up@example.org", "bench-admins", `data-profile="`+ns+`"`)
				case "overview-failing":
					target = "/overview?state=failing"
				}
				counter.Reset()
				view(b, h, target, user, groups)
				first := counter.Total()
				counter.Reset()
				var lat []time.Duration
				for b.Loop() {
					start := time.Now()
					view(b, h, target, user, groups)
					lat = append(lat, time.Since(start))
				}
				// After the loop: its start drops the metrics reported before.
				b.ReportMetric(float64(first), "first-view-requests")
				b.ReportMetric(float64(counter.Total())/float64(len(lat)), "api-requests/view")
				slices.Sort(lat)
				at := func(q float64) float64 {
					return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
				}
				b.ReportMetric(at(0.50), "p50-ms")
				b.ReportMetric(at(0.99), "p99-ms")
			})
		}
	}
}

// makeProfiles creates n Profiles from index from on, with the conditions
// of six plugins: one in a hundred fails one, one in fifty waits. The first
// 100 are members of the budget.
func makeProfiles(ctx context.Context, b *testing.B, c client.Client, from, n int) {
	b.Helper()
	jobs := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range jobs {
				if err := makeProfile(ctx, c, i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := from; i < from+n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

func makeProfile(ctx context.Context, c client.Client, i int) error {
	labels := map[string]string{"team": fmt.Sprintf("team-%d", i%50)}
	if i < 100 {
		labels["lab"] = "bench"
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%05d", i), Labels: labels},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: fmt.Sprintf("user-%d@example.org", i)}}}
	if err := c.Create(ctx, p); err != nil {
		return err
	}
	p.Status.Conditions = ready("CoreReady", "QuotasReady", "LimitRangeReady", "NetworkReady", "ContributorsReady", "BudgetsReady")
	switch {
	case i%100 == 7:
		p.Status.Conditions[0] = kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "ApplyFailed: NetworkReady is False: the API server timed out"}
		p.Status.Conditions[4] = kubeflowv1.ProfileCondition{Type: "NetworkReady", Status: "False", Message: "ApplyFailed: the API server timed out"}
	case i%50 == 3:
		p.Status.Conditions[0] = kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "Waiting: BudgetsReady is Unknown"}
		p.Status.Conditions[6] = kubeflowv1.ProfileCondition{Type: "BudgetsReady", Status: "Unknown", Message: "Waiting: waiting for headroom in budget bench for requests.cpu"}
	}
	return c.Status().Update(ctx, p)
}

// view asks h for target as user and fails unless it answers 200.
func view(b *testing.B, h http.Handler, target, user, groups string) {
	if code, body := serve(h, target, user, groups); code != http.StatusOK {
		b.Fatalf("GET %s as %s: %d\n%s", target, user, code, body)
	}
}

// waitFor asks until the body holds want.
func waitFor(b *testing.B, h http.Handler, target, user, groups, want string) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, body := serve(h, target, user, groups)
		if strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("GET %s: the body lacks %q:\n%s", target, want, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serve asks h for target as user, with groups, and returns the status and
// body.
func serve(h http.Handler, target, user, groups string) (int, string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("kubeflow-userid", "accounts.example.org:"+user)
	if groups != "" {
		req.Header.Set("kubeflow-groups", groups)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func create(tb testing.TB, obj client.Object) {
	tb.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil { //nolint:forbidigo // benchmarks call it too
		tb.Fatal(err)
	}
}
