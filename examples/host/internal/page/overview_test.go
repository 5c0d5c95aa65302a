package page_test

import (
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/internal/testenv"
)

// TestOverviewWhoSees: an administrator bound to the shipped ClusterRole,
// by name or through a group, sees every Profile, the failing ones first; a
// tenant is refused with no data, even one who binds that role in their own
// namespace, and the tenant page is served beside the overview as before.
func TestOverviewWhoSees(t *testing.T) {
	viewClusterRole(t)
	admins(t, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "root@example.org"}, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "platform-admins"})
	h := hostOn(t, env.Config, page.OverviewOptions{})

	okNS := tenant(t, "ok", "alice@example.org", ready("QuotasReady", "NetworkReady")...)
	bind(t, okNS, "core", "User", "alice@example.org", "admin")
	failing := profile(t, "failing", "bob@example.org", nil,
		kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "ApplyFailed: NetworkReady is False: the API server timed out"},
		kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True", Message: "Applied: 1 object in sync"},
		kubeflowv1.ProfileCondition{Type: "NetworkReady", Status: "False", Message: "ApplyFailed: the API server timed out"}).Name
	pending := profile(t, "pending", "bob@example.org", nil,
		kubeflowv1.ProfileCondition{Type: "Ready", Status: "False", Message: "Pending: BudgetsReady has not been reported yet"}).Name
	unreported := profile(t, "unreported", "bob@example.org", nil).Name

	body := eventually(t, h, "/overview", "root@example.org", "", okNS, failing, pending, unreported)
	at := func(name string) int { return strings.Index(body, `data-profile="`+name+`"`) }
	if !(at(failing) < at(pending) && at(pending) < at(okNS) && at(unreported) < at(okNS)) {
		t.Errorf("rows out of order: failing %d, pending %d, unreported %d, ready %d; want the failing one first and the ready one last",
			at(failing), at(pending), at(unreported), at(okNS))
	}
	for _, want := range []string{
		`<tr class="failing" data-profile="` + failing + `">`,
		`<strong title="NetworkReady">Network policies</strong> <small>(ApplyFailed)</small>: <span class="message">the API server timed out</span> <small class="fix">· the platform team</small>`,
		`<tr class="ready" data-profile="` + okNS + `"><td class="name"><a href="./?ns=` + okNS + `">`,
		`<tr class="pending" data-profile="` + unreported + `">`,
		`<span class="wait">BudgetsReady has not been reported yet</span>`,
		`<span class="wait">No plugin has reported yet.</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %s:\n%s", want, body)
		}
	}
	if _, grouped, _ := get(t, h, "/overview", "carol@example.org", "staff, platform-admins"); !strings.Contains(grouped, failing) {
		t.Errorf("a member of platform-admins does not see the overview:\n%s", grouped)
	}

	// The tenant, and the tenant who binds the role in their own namespace:
	// the review names no namespace, so a RoleBinding grants nothing.
	for _, rb := range []bool{false, true} {
		if rb {
			must(t, env.Client.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "overview-" + rand.String(5), Namespace: okNS},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: overviewRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice@example.org", APIGroup: rbacv1.GroupName}}}))
		}
		code, refused, hdr := get(t, h, "/overview?state=failing", "alice@example.org", "")
		if code != http.StatusForbidden {
			t.Errorf("a tenant (RoleBinding to the role in her namespace: %v) gets %d, want 403", rb, code)
		}
		for _, name := range []string{okNS, failing, pending, "bob@example.org", "<table"} {
			if strings.Contains(refused, name) {
				t.Errorf("the refusal tells %q:\n%s", name, refused)
			}
		}
		if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("the refusal's Content-Type %q, want text/plain", ct)
		}
	}
	if code, _, _ := get(t, h, "/overview", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no user-id header: %d, want 401", code)
	}
	eventually(t, h, "/?ns="+okNS, "alice@example.org", "", `<h1 id="namespace">`+okNS+`</h1>`)
}

// TestOverviewEscapingAndFilters: what a tenant writes (the owner's name,
// a condition message, the search echoed back) renders as text, the page
// has no script at all, and the filters keep what they say.
func TestOverviewEscapingAndFilters(t *testing.T) {
	admins(t, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "root@example.org"})
	h := hostOn(t, env.Config, page.OverviewOptions{})
	team := "t" + rand.String(6)
	hostile := profile(t, "hostile", script, map[string]string{"team": team},
		kubeflowv1.ProfileCondition{Type: "ContributorsReady", Status: "False", Message: "InvalidSpec: entry 0 " + script}).Name
	calm := profile(t, "calm", "dana@example.org", map[string]string{"team": team}, ready("ContributorsReady")...).Name
	other := profile(t, "other", "dana@example.org", nil, ready("ContributorsReady")...).Name

	body := eventually(t, h, "/overview?q="+team, "root@example.org", "", hostile, calm)
	for _, want := range []string{
		`<td class="owner">` + html.EscapeString(script) + `</td>`,
		`<span class="message">entry 0 ` + html.EscapeString(script) + `</span> <small class="fix">· the namespace owner</small>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %s:\n%s", want, body)
		}
	}
	_, echoed, hdr := get(t, h, "/overview?q="+url.QueryEscape(script), "root@example.org", "")
	for what, b := range map[string]string{"the list": body, "a search for a script": echoed} {
		if strings.Contains(b, "<script") {
			t.Errorf("%s holds a <script tag:\n%s", what, b)
		}
	}
	if !strings.Contains(echoed, `value="`+html.EscapeString(script)+`"`) {
		t.Errorf("the search is not echoed as text:\n%s", echoed)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") ||
		!strings.Contains(csp, "frame-ancestors 'self'") {
		t.Errorf("Content-Security-Policy %q, want no script from anywhere, and frames by the page's origin only", csp)
	}

	for _, tc := range []struct {
		query      string
		want, hide []string
	}{
		{"?selector=team%3D" + team, []string{hostile, calm}, []string{other}},
		{"?selector=team%3D" + team + "&state=failing", []string{hostile}, []string{calm, other}},
		{"?selector=team%3D" + team + "&state=ready", []string{calm}, []string{hostile, other}},
		{"?q=" + team + "&plugin=contributors&state=failing", []string{hostile}, []string{calm, other}},
		{"?q=" + calm, []string{calm}, []string{hostile, other}},
		{"?selector=team%3D%3D%3D", []string{`id="problem"`, "No Profile matches."}, []string{hostile, calm, other}},
	} {
		code, got, _ := get(t, h, "/overview"+tc.query, "root@example.org", "")
		if code != http.StatusOK {
			t.Errorf("%s: %d", tc.query, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks %s", tc.query, w)
			}
		}
		for _, n := range tc.hide {
			if strings.Contains(got, `data-profile="`+n+`"`) {
				t.Errorf("%s: lists %s", tc.query, n)
			}
		}
	}
}

// TestOverviewRequestsPerView: a view reads only the cache; a user's first
// view asks the API server one SubjectAccessReview, a repeated one nothing.
func TestOverviewRequestsPerView(t *testing.T) {
	admins(t, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "platform-admins"})
	var counter testenv.Counter
	h := hostOn(t, counter.Counting(env.Config), page.OverviewOptions{})
	p := profile(t, "counted", "erin@example.org", nil, ready("QuotasReady")...)
	// The process's first view starts the cache's informers.
	eventually(t, h, "/overview", "warm-up@example.org", "platform-admins", p.Name)

	counter.Reset()
	if code, _, _ := get(t, h, "/overview", "first@example.org", "platform-admins"); code != http.StatusOK {
		t.Fatalf("first view: %d", code)
	}
	want := []string{"POST /apis/authorization.k8s.io/v1/subjectaccessreviews"}
	if got := counter.Mutating(); counter.Total() != 1 || !slices.Equal(got, want) {
		t.Errorf("a user's first view sent %d requests, %v; want %v alone", counter.Total(), got, want)
	}
	counter.Reset()
	get(t, h, "/overview?state=ready", "first@example.org", "platform-admins")
	if n := counter.Total(); n != 0 {
		t.Errorf("a repeated view sent %d requests, want none", n)
	}
}
