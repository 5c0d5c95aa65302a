package page_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

const script = "<script>alert(1)</script>"

// TestWhoSeesWhat: a user sees the namespace they own and the one they
// contribute to, a group member the group's, and a namespace the user may
// not see answers exactly as one that does not exist.
func TestWhoSeesWhat(t *testing.T) {
	viewClusterRole(t)
	h := host(t)
	owned := tenant(t, "owned", "alice@example.org")
	bind(t, owned, "core", "User", "alice@example.org", "admin")
	contributed := tenant(t, "contrib", "bob@example.org")
	bind(t, contributed, "core", "User", "bob@example.org", "admin")
	bind(t, contributed, "contributors", "User", "alice@example.org", "edit")
	other := tenant(t, "other", "bob@example.org")
	grouped := tenant(t, "grouped", "bob@example.org")
	bind(t, grouped, "contributors", "Group", "team-d", "view")

	picker := eventually(t, h, "/", "alice@example.org", "", `value="`+owned+`"`, `value="`+contributed+`"`)
	if strings.Contains(picker, other) || strings.Contains(picker, grouped) {
		t.Errorf("alice's picker offers a namespace she may not see:\n%s", picker)
	}
	for _, ns := range []string{owned, contributed} {
		eventually(t, h, "/?ns="+ns, "alice@example.org", "", `<h1 id="namespace">`+ns+`</h1>`)
	}

	hiddenCode, hidden, hiddenHeader := get(t, h, "/?ns="+other, "alice@example.org", "")
	// The same name, so that the two bodies may be compared whole.
	must(t, env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: other}}))
	absentCode, absent, absentHeader := get(t, h, "/?ns="+other, "alice@example.org", "")
	if hiddenCode != http.StatusNotFound || absentCode != http.StatusNotFound {
		t.Errorf("status %d for a namespace alice may not see and %d for one that does not exist, want 404 for both", hiddenCode, absentCode)
	}
	if hidden != absent {
		t.Errorf("a hidden namespace's body differs from an absent one's:\n%s\n---\n%s", hidden, absent)
	}
	if hiddenHeader.Get("Content-Length") != absentHeader.Get("Content-Length") || strings.Contains(hidden, "bob@example.org") {
		t.Errorf("the hidden namespace's answer tells something of it:\n%s", hidden)
	}
	if code, _, _ := get(t, h, "/?ns=never-"+other, "alice@example.org", ""); code != http.StatusNotFound {
		t.Errorf("a namespace that never existed answers %d, want 404", code)
	}

	eventually(t, h, "/?ns="+grouped, "carol@example.org", "staff, team-d", `<h1 id="namespace">`+grouped+`</h1>`)
	if code, _, _ := get(t, h, "/?ns="+grouped, "carol@example.org", "staff"); code != http.StatusNotFound {
		t.Errorf("carol without team-d sees %s: %d, want 404", grouped, code)
	}
	if code, _, _ := get(t, h, "/", "", ""); code != http.StatusUnauthorized {
		t.Errorf("a request without the user-id header answers %d, want 401", code)
	}
}

// TestFiguresAndEscaping: the figures equal what the API server holds, and
// what a tenant writes renders as text.
func TestFiguresAndEscaping(t *testing.T) {
	viewClusterRole(t)
	h := host(t)
	ctx := t.Context()
	ns := tenant(t, "figures", "alice@example.org",
		kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True", Message: "Applied"},
		kubeflowv1.ProfileCondition{Type: "ContributorsReady", Status: "False", Message: "InvalidSpec: entry 0 " + script},
		kubeflowv1.ProfileCondition{Type: "NetworkReady", Status: "False", Message: "ApplyFailed: the API server timed out"})
	bind(t, ns, "core", "User", "alice@example.org", "admin")
	bind(t, ns, "contributors", "User", script, "view")

	figures(t, ns, "One GPU "+script)

	body := eventually(t, h, "/?ns="+ns, "alice@example.org", "",
		"<td>requests.cpu</td>", "<td>pods</td>", "add-gpu", "workspace", "default-editor", html.EscapeString(script))
	var live corev1.ResourceQuota
	must(t, env.Client.Get(ctx, metav1ObjectKey(ns, "kf-resource-quota"), &live))
	for _, r := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourcePods} {
		used, hard := live.Status.Used[r], live.Spec.Hard[r]
		want := "<td>" + string(r) + `</td><td class="used">` + used.String() + `</td><td class="hard">` + hard.String() + "</td>"
		if !strings.Contains(body, want) {
			t.Errorf("quota row for %s: want %s in:\n%s", r, want, body)
		}
	}
	for _, want := range []string{
		`<meter min="0" max="4000" value="1500"`,
		"<td>memory <small>(Container)</small></td><td>512Mi</td><td>2Gi</td>",
		"<td>Not ready <small>(InvalidSpec)</small></td><td class=\"message\">entry 0 &lt;script&gt;alert(1)&lt;/script&gt;</td><td>the namespace owner</td>",
		"<td>Not ready <small>(ApplyFailed)</small></td><td class=\"message\">the API server timed out</td><td>the platform team</td>",
		`<td class="member">&lt;script&gt;alert(1)&lt;/script&gt;</td><td>view</td><td>the Profile&#39;s contributors</td>`,
		"<code>arn:aws:iam::123456789012:role/" + ns + "</code>",
		"<td>workspace</td><td>Pending</td><td>10Gi</td>",
		"<code>team=research</code>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, script) {
		t.Errorf("a raw <script> tag from tenant input reached the page:\n%s", body)
	}
	_, _, hdr := get(t, h, "/?ns="+ns, "alice@example.org", "")
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self'") ||
		strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'self'") {
		t.Errorf("Content-Security-Policy %q, want scripts from the page's origin only and frames by it", csp)
	}
	if hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", hdr.Get("X-Content-Type-Options"))
	}
	if strings.Contains(body, "<script>") {
		t.Errorf("the page has an inline script")
	}
}
