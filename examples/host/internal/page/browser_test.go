package page_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins/apps"
)

// screenshot writes the tenant page's screenshot into docs/, for
// examples/host/docs/page.md; without it the picture goes to a temporary folder.
var screenshot = flag.Bool("page.screenshot", false, "TestInDashboard and TestOverviewInBrowser: write the screenshots to docs/page-tenant.png and docs/page-overview.png")

// TestInDashboard opens a stand-in dashboard that shows the page in an
// iframe and speaks library.js's protocol, in headless Chromium; switching
// the dashboard's namespace switches the page's. It saves a screenshot of
// the page to docs/page-tenant.png.
func TestInDashboard(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run make chromium (make test does), or apt-get install chromium")
	}
	viewClusterRole(t)
	argo := "argocd-" + rand.String(5)
	must(t, env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argo}}))
	h := hostWith(t, page.Options{AppsNamespace: argo}, apps.ApplicationKind)
	first := tenant(t, "first", "amara@example.org",
		kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "Pending: waiting for contributors"},
		kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True", Message: "Applied: 1 object in sync"},
		kubeflowv1.ProfileCondition{Type: "LimitRangeReady", Status: "True", Message: "Applied: 1 object in sync"},
		kubeflowv1.ProfileCondition{Type: "BudgetsReady", Status: "True", Message: "Applied: 1 object in sync"},
		kubeflowv1.ProfileCondition{Type: "ContributorsReady", Status: "False", Message: "InvalidSpec: entry 1 (User bob): role admin is not allowed on this cluster; use edit or view"},
		kubeflowv1.ProfileCondition{Type: "AwsIamForServiceAccountReady", Status: "False", Message: `IdentityNotAllowed: identity "arn:aws:iam::123456789012:role/shared-data" is not among the identities the host allows this Profile (allowedIdentities); nothing was granted`})
	bind(t, first, "core", "User", "amara@example.org", "admin")
	second := tenant(t, "second", "bob@example.org")
	bind(t, second, "contributors", "User", "amara@example.org", "edit")
	eventually(t, h, "/", "amara@example.org", "", `value="`+second+`"`)
	figures(t, first, "One NVIDIA GPU for training")
	application(t, argo, first+"-mlflow", first, first, map[string]any{
		"sync": map[string]any{"status": "Synced"}, "health": map[string]any{"status": "Healthy"}})
	application(t, argo, first+"-tracker", first, first, map[string]any{
		"sync": map[string]any{"status": "OutOfSync"}, "health": map[string]any{"status": "Progressing", "message": "Waiting for rollout to finish: 0 of 1 updated replicas are available"}})
	bind(t, first, "contributors", "User", "carol@example.org", "view")
	kfam(t, first, "User", "dan@example.org", "edit")
	share(t, first, "vision-lab",
		corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("6"), "requests.nvidia.com/gpu": resource.MustParse("2")},
		corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("2500m"), "requests.nvidia.com/gpu": resource.MustParse("2")})

	// The gateway: one origin for the dashboard and the page, the user's
	// header on every request to the page.
	mux := http.NewServeMux()
	for _, f := range []string{"dashboard.js", "dashboard_lib.bundle.js"} {
		mux.HandleFunc("/"+f, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			http.ServeFile(w, r, filepath.Join("testdata", f))
		})
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join("testdata", "dashboard.html"))
	})
	mux.Handle("/profilekit/", http.StripPrefix("/profilekit", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The user signed in: amara, unless the test's cookies name
		// another user and their groups.
		user := "amara@example.org"
		if c, err := r.Cookie("user"); err == nil {
			user = c.Value
		}
		r.Header.Set("kubeflow-userid", "accounts.example.org:"+user)
		if c, err := r.Cookie("groups"); err == nil {
			r.Header.Set("kubeflow-groups", c.Value)
		}
		h.ServeHTTP(w, r)
	})))
	gw := httptest.NewServer(mux)
	defer gw.Close()

	alloc, cancel := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	shown := `(() => { const d = document.getElementById("app").contentDocument; const h = d && d.getElementById("namespace"); return h ? h.textContent : ""; })()`
	waitShown := func(want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			var err error
			if got, err = chromedp.Run(ctx, chromedp.Evaluate[string](shown)); err != nil {
				t.Fatalf("read the iframe: %v", err)
			}
			if got == want {
				return
			}
		}
		t.Fatalf("the page in the dashboard shows %q, want %q", got, want)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.URL+"/?namespaces="+first+","+second)); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	waitShown(first)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("selector"), second)); err != nil {
		t.Fatalf("select %s: %v", second, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("selector").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatalf("select %s: %v", second, err)
	}
	waitShown(second)
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("app").contentDocument.getElementById("picker")).display === "none"`))
	must(t, err)
	if !hidden {
		t.Error("the page shows its own namespace picker inside the dashboard")
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(gw.URL+"/profilekit/?ns="+first), chromedp.WaitVisible(chromedp.ID("quota"))); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := filepath.Join(t.TempDir(), "page-tenant.png")
	if *screenshot {
		out = filepath.Join(testenv.RepoRoot(), "docs", "page-tenant.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the tenant page: %s (%d bytes)", out, len(png))

	// amara (a user of this test alone, so that other tests' namespaces
	// are not hers) owns first and contributes to second: both are
	// offered, a third she has no part in is not found; a member of the group that
	// third's binding names sees it; a contributor's name holding a
	// script tag is text.
	third := tenant(t, "third", "carol@example.org")
	kfam(t, third, "Group", "team-g", "view")
	kfamNamed(t, second, "user-script", "User", script, "view")
	seeAs(ctx, t, gw.URL, "amara@example.org", "", "/profilekit/", "#ns option", first+","+second)
	seeAs(ctx, t, gw.URL, "amara@example.org", "", "/profilekit/?ns="+third, "#notfound", "No namespace "+third+" that you can see.")
	seeAs(ctx, t, gw.URL, "erin@example.org", "team-g", "/profilekit/?ns="+third, "#namespace", third)
	seeAs(ctx, t, gw.URL, "amara@example.org", "", "/profilekit/?ns="+second, "#members td.member", script+",amara@example.org")
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.scripts.length`))
	must(t, err)
	if scripts != 2 {
		t.Errorf("the page holds %d script elements, want its own 2 (the dashboard's library and page.js)", scripts)
	}
}

// seeAs opens target on the gateway at gw as user with groups in the
// browser of ctx, until the text of the elements selector matches holds
// want (joined by commas).
func seeAs(ctx context.Context, t *testing.T, gw, user, groups, target, selector, want string) {
	t.Helper()
	set := fmt.Sprintf(`document.cookie = "user=%s; path=/"; document.cookie = "groups=%s; path=/"; true`, user, groups)
	read := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.textContent.trim()).join(",")`, selector)
	var got string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := chromedp.Do(ctx, chromedp.Navigate(gw+"/")); err != nil {
			t.Fatalf("open the gateway: %v", err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](set)); err != nil {
			t.Fatalf("sign in as %s: %v", user, err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(gw+target)); err != nil {
			t.Fatalf("open %s: %v", target, err)
		}
		var err error
		if got, err = chromedp.Run(ctx, chromedp.Evaluate[string](read)); err != nil {
			t.Fatalf("read %s: %v", selector, err)
		}
		if got == want {
			return
		}
	}
	t.Errorf("%s as %s (groups %q): %s shows %q, want %q", target, user, groups, selector, got, want)
}
