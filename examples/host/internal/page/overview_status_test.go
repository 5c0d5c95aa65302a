package page_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

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
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestOverviewRolloutBudgetsOutside: the rollout's progress, a team
// budget's shares, use and blocked members, and the outside calls' error
// rate equal what the API server and the metrics hold; the Grafana link is
// the configured one.
func TestOverviewRolloutBudgetsOutside(t *testing.T) {
	ctx := t.Context()
	admins(t, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "root@example.org"})
	hostNS := "host-" + rand.String(5)
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNS}}))

	lab := "lab-" + rand.String(5)
	budget := budgets.Budget{Name: lab, ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"lab": lab}},
		Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}
	full := tenant(t, "member", "alice@example.org")
	starved := tenant(t, "starved", "bob@example.org")
	for _, ns := range []string{full, starved} {
		p := &kubeflowv1.Profile{}
		must(t, env.Client.Get(ctx, metav1ObjectKey("", ns), p))
		p.Labels["lab"] = lab
		must(t, env.Client.Update(ctx, p))
	}
	// Shares as the balancer writes them, use as the quota controller
	// counts it.
	cpuPods := func(cpu, pods string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse(pods)}
	}
	share(t, full, lab, cpuPods("3", "4"), cpuPods("2500m", "4"))
	share(t, starved, lab, cpuPods("0", "0"), cpuPods("0", "0"))
	p := &kubeflowv1.Profile{}
	must(t, env.Client.Get(ctx, metav1ObjectKey("", starved), p))
	p.Status.Conditions = []kubeflowv1.ProfileCondition{{Type: "BudgetsReady", Status: "Unknown",
		Message: "Waiting: waiting for headroom in budget " + lab + " for requests.cpu: nothing is free and no other member has any to give (requests.cpu share 0, used 0)"}}
	must(t, env.Client.Status().Update(ctx, p))

	// A rollout paused at its first batch, which reached the Profiles whose
	// keys are at most starved's.
	must(t, env.Client.Get(ctx, metav1ObjectKey("", starved), p))
	to := rollout.Key(p.UID)
	started := time.Now().Add(time.Hour)
	must(t, env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName, Namespace: hostNS, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}},
		Data: map[string]string{"stableRevision": "0a1b2c3d4e", "stable": `{"quotas":{"enabled":"all"}}`, "candidateRevision": "5f6a7b8c9d",
			"started": started.UTC().Format(time.RFC3339Nano), "batches": "1", "from": "0", "to": strconv.FormatUint(to, 16),
			"paused": "true", "reason": "plugin quotas failed on 1 Profile(s) of batch 1 with revision 5f6a7b8c9d"}}))

	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "profilekit_outside_calls_total"}, []string{"plugin", "system", "result"})
	reg.MustRegister(calls)
	calls.WithLabelValues("blobcsi", "azure-blob", "ok").Add(36)
	calls.WithLabelValues("blobcsi", "azure-blob", "timeout").Add(4)

	h := hostOn(t, env.Config, page.OverviewOptions{
		GrafanaURL: "https://grafana.example.org/d/profilekit/profilekit", RolloutNamespace: hostNS, Budgets: []budgets.Budget{budget}, Metrics: reg,
		Sections: map[string]hostconfig.Plugin{"quotas": {Enabled: hostconfig.EnabledAll, Defaults: []byte(`{"hard":{"limits.cpu":"2"}}`)}},
	})
	body := eventually(t, h, "/overview", "root@example.org", "", "Paused", "waits for headroom", `<td class="used">2500m</td>`)

	// Every Profile the API server holds existed before the rollout began;
	// those whose keys are at most starved's have the candidate.
	var all kubeflowv1.ProfileList
	must(t, env.Client.List(ctx, &all))
	updated, members := 0, 0
	for _, q := range all.Items {
		if q.DeletionTimestamp.IsZero() {
			members++
			if rollout.Key(q.UID) <= to {
				updated++
			}
		}
	}
	for _, want := range []string{
		`<a id="grafana" href="https://grafana.example.org/d/profilekit/profilekit"`,
		`Paused: revision <code>5f6a7b8c9d</code>, batch 1`,
		fmt.Sprintf(`<span id="rollout-progress">%d of %d</span> Profiles have it; the others keep <code>0a1b2c3d4e</code>`, updated, members),
		"Changed plugins: quotas",
		`<p class="message">plugin quotas failed on 1 Profile(s) of batch 1 with revision 5f6a7b8c9d</p>`,
		`<h3>` + lab + ` <small>2 members, 2 with a share</small></h3>`,
		`<tr><td>requests.cpu</td><td>4</td><td class="shares">3</td><td class="used">2500m</td><td class="free">1</td>`,
		`<tr><td>pods</td><td>10</td><td class="shares">4</td><td class="used">4</td><td class="free">6</td>`,
		`Blocked: <a href="./?ns=` + starved + `">` + starved + `</a> <small>(waits for headroom)</small>`,
		`<tr class="bad"><td>blobcsi</td><td>azure-blob</td><td>40</td><td>0</td><td>4</td><td class="rate">10.0%</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %s:\n%s", want, body)
		}
	}

	// A state the leader could not have written is named, not guessed at.
	garbled := "host-" + rand.String(5)
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: garbled}}))
	must(t, env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName, Namespace: garbled, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}},
		Data:       map[string]string{"stableRevision": "0a1b2c3d4e", "stable": "{", "summary": "fine"}}))
	h = hostOn(t, env.Config, page.OverviewOptions{RolloutNamespace: garbled})
	eventually(t, h, "/overview", "root@example.org", "", "The rollout's state cannot be read: ConfigMap "+garbled+"/"+rollout.ConfigMapName+": stable: unexpected end of JSON input")
	if !strings.Contains(body, `id="grafana"`) {
		t.Error("no Grafana link with a GrafanaURL")
	}
	if _, plain, _ := get(t, h, "/overview", "root@example.org", ""); strings.Contains(plain, `id="grafana"`) {
		t.Error("a Grafana link without a GrafanaURL")
	}
}
