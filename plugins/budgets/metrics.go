package budgets

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The balancer's view of every budget, set after each pass, and its work.
var (
	hardGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_hard",
		Help: "What the members of a budget may hold together, by budget and resource.",
	}, []string{"budget", "resource"})
	sharesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_shares",
		Help: "Sum of the members' shares (their quotas' spec.hard), by budget and resource.",
	}, []string{"budget", "resource"})
	usedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_used",
		Help: "Sum of the members' use (their quotas' status.used), by budget and resource.",
	}, []string{"budget", "resource"})
	headroomGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_headroom",
		Help: "What is free in a budget: hard less what members hold (the largest of share, enforced share and use), by budget and resource; negative when over.",
	}, []string{"budget", "resource"})
	membersGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_members",
		Help: "Profiles a budget's selector matches, by budget.",
	}, []string{"budget"})
	blockedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_blocked_members",
		Help: "Members that asked for headroom and got none (nothing free, nobody quiet to give), by budget.",
	}, []string{"budget"})
	writesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_budget_writes_total",
		Help: "Writes of budget quotas, by budget, operation (create, lower, raise, delete) and result (ok, conflict, error).",
	}, []string{"budget", "op", "result"})
	overuseGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_overuse",
		Help: "Use beyond the members' own shares that nothing free covers (pods the API server admitted past a quota, kubernetes/kubernetes#123434, or a member that joined with pods), summed over members, by budget and resource; it blocks those members' new pods until their use drops.",
	}, []string{"budget", "resource"})
	overusedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_budget_overused_members",
		Help: "Members whose use is beyond their own share for some resource, by budget.",
	}, []string{"budget"})
	overAdmittedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_budget_overadmitted_total",
		Help: "Use the API server admitted past a member's enforced share (kubernetes/kubernetes#123434), as the balancer saw it grow, by budget and resource, in the resource's unit (pods for count/pods).",
	}, []string{"budget", "resource"})
	rebalancesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_budget_rebalances_total",
		Help: "Moves of headroom between members (lowerings enforced, then raises), by budget.",
	}, []string{"budget"})
)

func init() {
	metrics.Registry.MustRegister(hardGauge, sharesGauge, usedGauge, headroomGauge, membersGauge, blockedGauge, writesTotal, rebalancesTotal, overuseGauge, overusedGauge, overAdmittedTotal)
}
