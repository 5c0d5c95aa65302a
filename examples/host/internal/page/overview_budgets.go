package page

// This file holds what the overview shows of the team budgets, read from
// the host's cache.

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// budgetView is one team budget: what its members hold and use together,
// and the members that cannot start new pods.
type budgetView struct {
	Name string
	// Members are the Profiles its selector matches; Quotas those that
	// have their share's quota.
	Members, Quotas int
	Resources       []budgetResource
	Blocked         []blockedMember
	// More counts the blocked members not listed.
	More int
}

// budgetResource is one resource of a budget.
type budgetResource struct {
	Resource, Hard, Shares, Used, Free string
	// Over is set when the members hold more than the budget.
	Over bool
	// HardValue, SharesValue and UsedValue are in thousandths, for the
	// bars; HighValue, nine tenths of hard, is where a bar turns.
	HardValue, SharesValue, UsedValue, HighValue int64
}

// blockedMember is a member whose new pods wait, and why.
type blockedMember struct{ Profile, Why string }

// blockedShown is how many blocked members a budget lists by name.
const blockedShown = 10

// budgets sums each budget's quotas, as the balancer wrote them and the
// quota controller counted their use, and finds its blocked members in
// the budgets plugin's conditions.
func (o *Overview) budgets(ctx context.Context, profiles []kubeflowv1.Profile) ([]budgetView, error) {
	if len(o.opts.Budgets) == 0 {
		return nil, nil
	}
	var quotas corev1.ResourceQuotaList
	if err := o.tenant.read.List(ctx, &quotas, client.MatchingLabels{plugins.LabelPlugin: budgets.Kind}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list budget quotas: %w", err)
	}
	byBudget := map[string][]*corev1.ResourceQuota{}
	for i := range quotas.Items {
		q := &quotas.Items[i]
		byBudget[q.Labels[budgets.LabelBudget]] = append(byBudget[q.Labels[budgets.LabelBudget]], q)
	}
	condition := plugins.ConditionTypeFor(budgets.Kind)
	var out []budgetView
	for _, b := range o.opts.Budgets {
		v := budgetView{Name: b.Name, Quotas: len(byBudget[b.Name])}
		sel, err := metav1.LabelSelectorAsSelector(b.ProfileSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		for i := range profiles {
			p := &profiles[i]
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			v.Members++
			if why := blocked(plugins.FindCondition(p.Status.Conditions, condition), b.Name); why != "" {
				if len(v.Blocked) < blockedShown {
					v.Blocked = append(v.Blocked, blockedMember{Profile: p.Name, Why: why})
				} else {
					v.More++
				}
			}
		}
		for _, r := range sortedKeys(b.Hard) {
			v.Resources = append(v.Resources, sumResource(r, b.Hard[r], byBudget[b.Name]))
		}
		out = append(out, v)
	}
	return out, nil
}

// sumResource adds up resource r over a budget's quotas: the shares
// (spec.hard), the use (status.used) and what is free, hard less what the
// members hold (the largest of a share, the share the API server enforces
// and the use), as the balancer counts it.
func sumResource(r corev1.ResourceName, hard resource.Quantity, quotas []*corev1.ResourceQuota) budgetResource {
	shares, used, held := resource.Quantity{Format: hard.Format}, resource.Quantity{Format: hard.Format}, resource.Quantity{Format: hard.Format}
	for _, q := range quotas {
		share, enforced, use := q.Spec.Hard[r], q.Status.Hard[r], q.Status.Used[r]
		shares.Add(share)
		used.Add(use)
		most := share
		for _, x := range []resource.Quantity{enforced, use} {
			if x.Cmp(most) > 0 {
				most = x
			}
		}
		held.Add(most)
	}
	free := hard.DeepCopy()
	free.Sub(held)
	return budgetResource{Resource: string(r), Hard: hard.String(), Shares: shares.String(), Used: used.String(), Free: free.String(),
		Over: free.Sign() < 0, HardValue: hard.MilliValue(), SharesValue: shares.MilliValue(), UsedValue: used.MilliValue(), HighValue: hard.MilliValue() / 10 * 9}
}

// blocked says why a member's new pods wait in budget name, as the
// budgets plugin's condition c tells: it waits for headroom, it uses more
// than its share, or the budget is over. "" when they do not wait.
func blocked(c *kubeflowv1.ProfileCondition, name string) string {
	if c == nil || c.Status == plugins.ConditionTrue {
		return ""
	}
	switch m := c.Message; {
	case strings.Contains(m, "budget "+name+" is over"):
		return "the budget is over"
	case strings.Contains(m, "headroom in budget "+name+" "):
		return "waits for headroom"
	case strings.Contains(m, "use in budget "+name+" to drop"):
		return "uses more than its share"
	}
	return ""
}
