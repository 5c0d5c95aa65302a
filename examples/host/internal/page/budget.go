package page

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// budgetsCondition is the budgets plugin's condition type.
var budgetsCondition = plugins.ConditionTypeFor(budgets.Kind)

// Budget is the namespace's share of one resource of a team budget: the
// spec.hard of the ResourceQuota the budgets plugin's balancer keeps in
// the namespace, what the namespace uses of it, and the headroom left.
type Budget struct {
	Budget, Resource string
	Share, Used      string
	// Headroom is the share less the use; Over is set, and Headroom says
	// by how much, when the use is beyond the share.
	Headroom string
	Over     bool
	// ShareValue and UsedValue are the amounts in thousandths, for the bar.
	ShareValue, UsedValue int64
}

// budgetQuota reports whether q is a share of a team budget that the
// budgets plugin keeps for Profile profile, and names the budget.
func budgetQuota(q *corev1.ResourceQuota, profile string) (string, bool) {
	name := q.Labels[budgets.LabelBudget]
	return name, name != "" && plugins.IsOwnedBy(q.Labels, budgets.Kind, profile)
}

// addBudget adds each resource of a budget's quota in the namespace.
func (v *View) addBudget(budget string, q *corev1.ResourceQuota) {
	for _, name := range sortedKeys(q.Spec.Hard) {
		share, used := q.Spec.Hard[name], q.Status.Used[name]
		left := share.DeepCopy()
		left.Sub(used)
		b := Budget{Budget: budget, Resource: string(name), Share: share.String(), Used: used.String(),
			ShareValue: share.MilliValue(), UsedValue: used.MilliValue()}
		if left.Sign() < 0 {
			left.Neg()
			b.Over = true
		}
		b.Headroom = left.String()
		v.Budgets = append(v.Budgets, b)
	}
}
