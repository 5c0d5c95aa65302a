package page_test

import (
	"html"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/plugins/apps"
)

// application makes the Application name in argo as the apps plugin keeps
// it for Profile profile, deploying into dest, with Argo CD's status.
func application(t *testing.T, argo, name, profile, dest string, status map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apps.ApplicationKind)
	u.SetNamespace(argo)
	u.SetName(name)
	u.SetLabels(labels(apps.Kind, profile))
	u.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://charts.example.org", "chart": "mlflow", "targetRevision": "1.2.3"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": dest},
	}
	if status != nil {
		// The Application CRD has no status subresource: Argo CD writes
		// status with the object.
		u.Object["status"] = status
	}
	must(t, env.Client.Create(t.Context(), u))
}

// TestAppsSection: the namespace's apps, as the apps plugin keeps them in
// the Argo CD namespace, with Argo CD's sync and health; an unhealthy
// app's message renders as text; another Profile's app, or one of ours
// that deploys elsewhere, is not listed; a host without the apps plugin
// shows no apps section.
func TestAppsSection(t *testing.T) {
	viewClusterRole(t)
	argo := "argocd-" + rand.String(5)
	must(t, env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argo}}))
	h := hostWith(t, page.Options{AppsNamespace: argo}, apps.ApplicationKind)
	without := host(t)
	ns := tenant(t, "apps", "alice@example.org")
	bind(t, ns, "core", "User", "alice@example.org", "admin")
	other := tenant(t, "other", "bob@example.org")

	application(t, argo, ns+"-mlflow", ns, ns, map[string]any{
		"sync": map[string]any{"status": "Synced"}, "health": map[string]any{"status": "Healthy"}})
	application(t, argo, ns+"-tracker", ns, ns, map[string]any{
		"sync":   map[string]any{"status": "OutOfSync"},
		"health": map[string]any{"status": "Degraded", "message": "Deployment tracker: " + script}})
	application(t, argo, ns+"-new", ns, ns, nil)
	application(t, argo, other+"-mlflow", other, other, nil)
	application(t, argo, ns+"-elsewhere", ns, other, nil)

	body := eventually(t, h, "/?ns="+ns, "alice@example.org", "", ns+"-new")
	sec := section(body, "apps")
	for _, want := range []string{
		`<tr class="ok"><td class="app">` + ns + `-mlflow</td><td><code>https://charts.example.org · mlflow</code></td><td class="sync">Synced</td><td class="health">Healthy</td></tr>`,
		`<tr class="bad"><td class="app">` + ns + `-tracker</td>`,
		`<td class="sync">OutOfSync</td><td class="health">Degraded: <span class="message">Deployment tracker: ` + html.EscapeString(script) + `</span></td>`,
		`<tr><td class="app">` + ns + `-new</td><td><code>https://charts.example.org · mlflow</code></td><td class="sync">Unknown</td><td class="health">Unknown</td>`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the apps section lacks %s:\n%s", want, sec)
		}
	}
	for _, not := range []string{other + "-mlflow", ns + "-elsewhere", script} {
		if strings.Contains(sec, not) {
			t.Errorf("the apps section shows %s:\n%s", not, sec)
		}
	}
	// Apps listed in the order of their names.
	if a, b := strings.Index(sec, ns+"-mlflow"), strings.Index(sec, ns+"-tracker"); a < 0 || b < a {
		t.Errorf("apps out of order:\n%s", sec)
	}

	body = eventually(t, without, "/?ns="+ns, "alice@example.org", "", `id="quota"`)
	if strings.Contains(body, `id="apps"`) {
		t.Errorf("a host without the apps plugin shows an apps section:\n%s", section(body, "apps"))
	}
}
