package budgets_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestMembersJoinMoveAndLeave follows two members of a 2-CPU budget: each
// joins with a share from what is free, a refused workload gets the other's
// unused share (lowered first), and a member that leaves loses its quota
// and its share goes back to the pool.
func TestMembersJoinMoveAndLeave(t *testing.T) {
	ctx := t.Context()
	team, name := uniqueName("team"), uniqueName("b")
	bal := startBalancer(t, hostConfig(t, teamBudget(name, team, cpu("2"), cpu("1"))))
	a, b := newMember(t, uniqueName("a"), team), newMember(t, uniqueName("b"), team)
	waitShare(t, a.Name, name, corev1.ResourceRequestsCPU, "1")
	waitShare(t, b.Name, name, corev1.ResourceRequestsCPU, "1")

	askForMore(t, a.Name)
	waitShare(t, b.Name, name, corev1.ResourceRequestsCPU, "0")
	waitShare(t, a.Name, name, corev1.ResourceRequestsCPU, "2")
	if err := createPod(ctx, env.Client, a.Name, "1"); err != nil {
		t.Fatalf("pod within a's new share: %v", err)
	}
	if err := createPod(ctx, env.Client, b.Name, "100m"); !refused(err) {
		t.Fatalf("pod in b with the budget spent: %v, want refused", err)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		got := map[string]float64{
			"profilekit_budget_hard": gauge(t, "profilekit_budget_hard", name), "profilekit_budget_shares": gauge(t, "profilekit_budget_shares", name),
			"profilekit_budget_used": gauge(t, "profilekit_budget_used", name), "profilekit_budget_headroom": gauge(t, "profilekit_budget_headroom", name),
			"profilekit_budget_members": gauge(t, "profilekit_budget_members", name), "profilekit_budget_rebalances_total": gauge(t, "profilekit_budget_rebalances_total", name),
		}
		want := map[string]float64{"profilekit_budget_hard": 2, "profilekit_budget_shares": 2, "profilekit_budget_used": 2, "profilekit_budget_headroom": 0, "profilekit_budget_members": 2}
		for k, v := range want {
			if got[k] != v {
				return false, fmt.Sprintf("metrics %v, want %v and rebalances", got, want)
			}
		}
		return got["profilekit_budget_rebalances_total"] >= 2, fmt.Sprintf("metrics %v", got)
	})

	// b leaves: its quota goes.
	testhost.UpdateProfile(t, env.Client, b.Name, func(p *kubeflowv1.Profile) { delete(p.Labels, labelTeam) })
	eventually(t, 10*time.Second, func() (bool, string) {
		_, err := quota(ctx, b.Name, name)
		return apierrors.IsNotFound(err), "b's quota is still there"
	})
	// Every create and delete is counted as what it was.
	for _, w := range []struct {
		op, result string
		want       float64
	}{{"create", "ok", 2}, {"create", "error", 0}, {"delete", "ok", 1}, {"delete", "error", 0}} {
		if got := gauge(t, "profilekit_budget_writes_total", name, "op", w.op, "result", w.result); got != w.want {
			t.Errorf("writes of quotas, %s %s: %v, want %v", w.op, w.result, got, w.want)
		}
	}
	// A third member joins with nothing free: share 0.
	c := newMember(t, uniqueName("c"), team)
	waitShare(t, c.Name, name, corev1.ResourceRequestsCPU, "0")
	q, err := quota(ctx, c.Name, name)
	if err != nil {
		t.Fatal(err)
	}
	if q.Labels[budgets.LabelBudget] != name || len(q.OwnerReferences) != 1 || q.OwnerReferences[0].UID != c.UID {
		t.Errorf("quota labels %v, owners %v", q.Labels, q.OwnerReferences)
	}

	// Settled, a pass (one every tick) reads from the cache and sends
	// nothing.
	bal.counter.Reset()
	time.Sleep(time.Second)
	if n := bal.counter.Total(); n != 0 {
		t.Errorf("an idle balancer sent %d requests in a second: %s", n, bal.counter)
	}
}

// TestLoweringKeepsTheOtherLimits lowers one resource of a budget of two:
// a refusal for CPU moves b's CPU share to a, and every write of b's quota
// on the way keeps its pods limit. Admission refuses any write of b's
// quota without one, so a lowering that dropped it never reaches the
// quota, and the CPU never moves.
func TestLoweringKeepsTheOtherLimits(t *testing.T) {
	ctx := t.Context()
	team, name := uniqueName("team"), uniqueName("b")
	hard, grant := cpu("2"), cpu("1")
	hard[corev1.ResourcePods], grant[corev1.ResourcePods] = resource.MustParse("10"), resource.MustParse("5")
	a, b := uniqueName("a"), uniqueName("b")
	newMember(t, a, team)
	newMember(t, b, team)
	probe := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "probe"}}
	testhost.Refuse(t, env.Client, "keep-pods-"+b, "resourcequotas",
		"object.metadata.namespace != '"+b+"' || has(object.spec.hard) && 'pods' in object.spec.hard", probe)
	startBalancer(t, hostConfig(t, teamBudget(name, team, hard, grant)))
	waitShare(t, a, name, corev1.ResourceRequestsCPU, "1")
	waitShare(t, b, name, corev1.ResourceRequestsCPU, "1")

	askForMore(t, a)
	waitShare(t, b, name, corev1.ResourceRequestsCPU, "0")
	waitShare(t, a, name, corev1.ResourceRequestsCPU, "2")
	for _, ns := range []string{a, b} {
		q, err := quota(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Spec.Hard[corev1.ResourcePods]; got.Cmp(grant[corev1.ResourcePods]) != 0 {
			t.Errorf("%s's pods limit after the CPU moved: %s, want its grant, 5", ns, got.String())
		}
	}
}

// TestMetricsCountInTheResourcesUnit: a budget of 3 CPUs with one member
// granted 1 and using half of it: the metrics say 3, 1, 0.5 and 2 CPUs of
// headroom, not thousandths.
func TestMetricsCountInTheResourcesUnit(t *testing.T) {
	team, name := uniqueName("team"), uniqueName("b")
	startBalancer(t, hostConfig(t, teamBudget(name, team, cpu("3"), cpu("1"))))
	a := newMember(t, uniqueName("a"), team)
	waitShare(t, a.Name, name, corev1.ResourceRequestsCPU, "1")
	if err := createPod(t.Context(), env.Client, a.Name, "500m"); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"profilekit_budget_hard": 3, "profilekit_budget_shares": 1, "profilekit_budget_used": 0.5, "profilekit_budget_headroom": 2}
	eventually(t, 10*time.Second, func() (bool, string) {
		got := map[string]float64{}
		for m := range want {
			got[m] = gauge(t, m, name)
		}
		return maps.Equal(got, want), fmt.Sprintf("metrics %v, want %v", got, want)
	})

	// Now the API server over-admits (kubernetes/kubernetes#123434): a's
	// use grows past the share it enforces, 1500m of 1. Written here as
	// the quota's status, which the quota controller then leaves until
	// its next full sync, minutes away.
	var q corev1.ResourceQuota
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: a.Name, Name: budgets.QuotaName(name)}, &q); err != nil {
		t.Fatal(err)
	}
	q.Status.Used[corev1.ResourceRequestsCPU] = resource.MustParse("1500m")
	if err := env.Client.Status().Update(t.Context(), &q); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		got := gauge(t, "profilekit_budget_overadmitted_total", name, "resource", string(corev1.ResourceRequestsCPU))
		return got == 0.5, fmt.Sprintf("profilekit_budget_overadmitted_total %v CPU, want 0.5", got)
	})
}

// gauge sums the series of a budgets metric for one budget, of those that
// also carry each label and value of pairs ("op", "create", say).
func gauge(t *testing.T, metric, budget string, pairs ...string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"budget": budget}
	for i := 0; i+1 < len(pairs); i += 2 {
		want[pairs[i]] = pairs[i+1]
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				total += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return total
}
