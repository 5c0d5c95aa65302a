package budgets_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
	"github.com/profilekit/profilekit/reconcilers"
)

const condType = "BudgetsReady"

// startHost runs the plugin and its balancer in the standalone host, for
// every Profile labelled run, with the budgets bs.
func startHost(t *testing.T, run string, bs ...budgets.Budget) {
	t.Helper()
	raw, err := json.Marshal(budgets.Config{Budgets: bs})
	if err != nil {
		t.Fatal(err)
	}
	testhost.Start(t, env, testhost.Plugin{Def: budgets.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(raw),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{"budgets.test/run": run})),
	}})
}

// TestConditionWhenOverBudget: a Profile joins a budget of 1 CPU with 2 CPUs
// of pods already running. Nothing is evicted; its share is the budget, not
// its use (shares never sum past the budget), a new pod is refused, and its
// condition says the budget is over and the member over its share. Once a
// pod finishes, its use is within its share and the condition is True.
func TestConditionWhenOverBudget(t *testing.T) {
	ctx := t.Context()
	run, team, name := uniqueName("run"), uniqueName("team"), uniqueName("b")
	startHost(t, run, teamBudget(name, team, cpu("1"), cpu("1")))
	p := testhost.NewProfile(t, env.Client, uniqueName("over"), map[string]string{"budgets.test/run": run})
	for range 2 {
		if err := createPod(ctx, env.Client, p.Name, "1"); err != nil {
			t.Fatal(err)
		}
	}
	testhost.UpdateProfile(t, env.Client, p.Name, func(p *kubeflowv1.Profile) { p.Labels[labelTeam] = team })

	waitShare(t, p.Name, name, corev1.ResourceRequestsCPU, "1")
	want := "OverBudget: budget " + name + " is over: members hold requests.cpu 2 of 1; nothing is evicted, and new pods are refused until use drops (requests.cpu share 1, used 2; over its share: requests.cpu used 2 of 1)"
	cond := testhost.WaitCondition(t, env.Client, p.Name, condType, plugins.ConditionFalse, want)
	t.Logf("condition: %s", cond.Message)
	// The metrics count in the resource's unit: CPUs.
	eventually(t, 5*time.Second, func() (bool, string) {
		over, used := gauge(t, "profilekit_budget_overuse", name), gauge(t, "profilekit_budget_used", name)
		return over == 1 && used == 2, fmt.Sprintf("overuse %v, used %v; want 1 and 2", over, used)
	})
	if err := createPod(ctx, env.Client, p.Name, "100m"); !refused(err) {
		t.Errorf("a new pod over budget: %v, want refused", err)
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(p.Name)); err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods %d, %v: want the 2 pods kept", len(pods.Items), err)
	}
	if err := env.Client.Delete(ctx, &pods.Items[0]); err != nil {
		t.Fatal(err)
	}
	waitShare(t, p.Name, name, corev1.ResourceRequestsCPU, "1")
	testhost.WaitCondition(t, env.Client, p.Name, condType, plugins.ConditionTrue, "")
}

// TestConditionWhenStarved: the second member of a budget of one CPU, all
// of it used by the first, has a workload refused; it waits for headroom,
// and its condition says so with its share and use.
func TestConditionWhenStarved(t *testing.T) {
	run, team, name := uniqueName("run"), uniqueName("team"), uniqueName("b")
	startHost(t, run, teamBudget(name, team, cpu("1"), cpu("1")))
	first := testhost.NewProfile(t, env.Client, uniqueName("first"), map[string]string{"budgets.test/run": run, labelTeam: team})
	waitShare(t, first.Name, name, corev1.ResourceRequestsCPU, "1")
	if err := createPod(t.Context(), env.Client, first.Name, "1"); err != nil {
		t.Fatal(err)
	}
	second := testhost.NewProfile(t, env.Client, uniqueName("second"), map[string]string{"budgets.test/run": run, labelTeam: team})
	waitShare(t, second.Name, name, corev1.ResourceRequestsCPU, "0")
	err := createPod(t.Context(), env.Client, second.Name, "500m")
	if !refused(err) {
		t.Fatalf("pod in the second member: %v, want refused", err)
	}
	if err := recordRefusal(t.Context(), env.Client, second.Name, err); err != nil {
		t.Fatal(err)
	}
	cond := testhost.WaitCondition(t, env.Client, second.Name, condType, plugins.ConditionUnknown, "headroom in budget")
	t.Logf("condition: %s", cond.Message)
	want := "Waiting: waiting for headroom in budget " + name + " for requests.cpu: nothing is free and no other member has any to give (requests.cpu share 0, used 0)"
	if cond.Message != want {
		t.Errorf("condition message\n got %q\nwant %q", cond.Message, want)
	}
	testhost.WaitCondition(t, env.Client, first.Name, condType, plugins.ConditionTrue, "")

	// The first leaves (its pod stays, outside the budget): the second
	// gets the CPU.
	testhost.UpdateProfile(t, env.Client, first.Name, func(p *kubeflowv1.Profile) { delete(p.Labels, labelTeam) })
	waitShare(t, second.Name, name, corev1.ResourceRequestsCPU, "1")
	testhost.WaitCondition(t, env.Client, second.Name, condType, plugins.ConditionTrue, "")
}
