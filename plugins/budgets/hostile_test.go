package budgets_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestTenantCannotOverspend gives a member's namespace to a tenant
// impersonated with Kubeflow's kubeflow-edit rights. The tenant cannot
// write its budget quota, make one of its own, move its Profile into or out
// of a budget, or write Events in another member's namespace. Events it
// forges in its own namespace, claiming refusals by the budget's quota,
// ask for headroom at most: the members never hold more than the budget,
// the tenant never holds more than it uses plus two grants, and the other
// member's workload still gets what is free.
func TestTenantCannotOverspend(t *testing.T) {
	ctx := t.Context()
	team, name := uniqueName("hostile"), uniqueName("b")
	startBalancer(t, hostConfig(t, teamBudget(name, team, cpu("4"), cpu("1"))))
	a, b := newMember(t, uniqueName("tenant"), team), newMember(t, uniqueName("other"), team)
	waitShare(t, a.Name, name, corev1.ResourceRequestsCPU, "1")
	waitShare(t, b.Name, name, corev1.ResourceRequestsCPU, "1")
	tenant := testhost.Tenant(t, env, a.Name)

	q, err := quota(ctx, a.Name, name)
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[string]error{
		"update its quota": tenant.Update(ctx, withShare(q, "100")),
		"delete its quota": tenant.Delete(ctx, q.DeepCopy()),
		"create a quota of the budget's name in another member's namespace": tenant.Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: b.Name, Name: budgets.QuotaName(name)},
		}),
		"create a quota of its own": tenant.Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.Name, Name: "mine"},
			Spec:       corev1.ResourceQuotaSpec{Hard: cpu("100")},
		}),
		"leave the budget by relabelling its Profile": tenant.Patch(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: a.Name}},
			client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{%q:null}}}`, labelTeam))),
		"forge a refusal in another member's namespace": recordRefusal(ctx, tenant, b.Name, fmt.Errorf("exceeded quota: %s, requested: requests.cpu=1, used: requests.cpu=0, limited: requests.cpu=0", budgets.QuotaName(name))),
	}
	for what, err := range attempts {
		if !apierrors.IsForbidden(err) {
			t.Errorf("tenant could %s: %v, want Forbidden", what, err)
		}
	}

	// The tenant forges refusals in its own namespace, huge ones, every
	// 50 ms, and uses what it gets, while the other member's workload
	// asks for 3 CPUs.
	forge := fmt.Errorf(`pods "x" is forbidden: exceeded quota: %s, requested: requests.cpu=1000, used: requests.cpu=1, limited: requests.cpu=1`, budgets.QuotaName(name))
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for fctx.Err() == nil {
			_ = recordRefusal(fctx, tenant, a.Name, forge)
			_ = createPod(fctx, tenant, a.Name, "500m")
			sleep(fctx, 50*time.Millisecond)
		}
	})
	var worst string
	var maxHeld, maxTenantHeadroom int64
	wg.Go(func() {
		for fctx.Err() == nil {
			var quotas corev1.ResourceQuotaList
			if err := env.Client.List(fctx, &quotas, client.MatchingLabels{budgets.LabelBudget: name}); err == nil {
				held := int64(0)
				for _, q := range quotas.Items {
					spec, enforced, used := q.Spec.Hard[corev1.ResourceRequestsCPU], q.Status.Hard[corev1.ResourceRequestsCPU], q.Status.Used[corev1.ResourceRequestsCPU]
					h := max(spec.MilliValue(), enforced.MilliValue(), used.MilliValue())
					held += h
					if q.Namespace == a.Name && h-used.MilliValue() > maxTenantHeadroom {
						maxTenantHeadroom = h - used.MilliValue()
					}
				}
				if held > maxHeld {
					maxHeld, worst = held, fmt.Sprintf("%+v", quotas.Items)
				}
			}
			sleep(fctx, 20*time.Millisecond)
		}
	})
	admitted := 0
	deadline := time.Now().Add(8 * time.Second)
	for admitted < 3 && time.Now().Before(deadline) {
		err := createPod(ctx, env.Client, b.Name, "1")
		switch {
		case err == nil:
			admitted++
		case refused(err):
			_ = recordRefusal(ctx, env.Client, b.Name, err)
			sleep(ctx, 100*time.Millisecond)
		default:
			t.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(a.Name)); err != nil {
		t.Fatal(err)
	}
	t.Logf("the other member's workload got %d of 3 CPUs; the tenant has %d pods of 500m; members held at most %dm of 4000m; the tenant's headroom was at most %dm",
		admitted, len(pods.Items), maxHeld, maxTenantHeadroom)
	if maxHeld > 4000 {
		t.Errorf("members held %dm of a 4000m budget:\n%s", maxHeld, worst)
	}
	if maxTenantHeadroom > 2000 {
		t.Errorf("the tenant held %dm beyond its use, more than two grants", maxTenantHeadroom)
	}
	if admitted+len(pods.Items)/2 < 4 {
		t.Errorf("the budget's 4 CPUs were not used: the other member got %d, the tenant %d pods of 500m", admitted, len(pods.Items))
	}
}

// withShare is q with a share of cpu CPUs.
func withShare(q *corev1.ResourceQuota, cpuShare string) *corev1.ResourceQuota {
	out := q.DeepCopy()
	out.Spec.Hard = cpu(cpuShare)
	return out
}
