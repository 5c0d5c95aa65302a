// Package budgets gives teams of Profiles budgets they cannot overspend
// together: a lab of 20 Profiles shares 16 GPUs, and headroom moves to the
// members that use it.
//
// # What it makes
//
// For every budget and every member (a Profile its profileSelector
// matches), one ResourceQuota profilekit-budget-<budget> in the member's
// namespace, whose spec.hard is the member's share. The shares of a budget
// never sum to more than the budget, resource by resource, at any moment:
// the API server's quota admission, which is atomic per namespace, then
// refuses any pod that would take the team over. A Profile under two
// budgets has two quotas, and a pod must fit both: what it requests of a
// resource two budgets limit counts against each.
//
// # Why host configuration and not a CRD
//
// Who may spend what is the platform's decision, not a tenant's: budgets
// live in the host's configuration, which tenants cannot write, and a
// Profile's spec that sets them is refused. Membership is by the
// selector alone: a Profile that stops listing the plugin in spec.plugins
// keeps its quotas while it matches (Revoke removes only the quotas of
// budgets it no longer matches), so select members by labels the platform
// sets, not by labels a self-serve tenant chooses when it creates its
// Profile.
//
// # The balancer
//
// The plugin's Runner, which runs in the standalone host (as leader), is
// the only writer of shares. It counts what a member holds as the largest
// of its share (spec.hard), the share the API server enforces (status.hard,
// which kube-controller-manager's quota controller copies from spec.hard)
// and its use (status.used), all read from the API server; so a host that
// restarts in the middle of a move keeps the rule. Then:
//
//   - shares follow use: a share is never lowered below use, and a member
//     whose headroom (held less use) is under its budget's grant asks for a
//     grant of headroom; a member whose workload was refused by the quota
//     (a workload controller's FailedCreate Event, "exceeded quota") asks
//     for a grant more than it holds;
//   - asks are served from what is free, then from members' headroom beyond
//     their own grant, and, for refused workloads, from the headroom of
//     members none of whose workloads was refused;
//   - a move lowers the donors first (a patch that carries the
//     resourceVersion read, so that a pod admitted meanwhile makes it fail),
//     waits until the quota controller enforces the lowered shares, reads
//     every quota afresh, and only then raises the receivers, as far as what
//     that read shows free allows. Raising first would let a donor spend
//     its old share while the receiver spends its new one; the package's
//     load test shows that overspend within seconds;
//   - a quota whose use changed in the last second (the quiet period) is
//     not changed: see the gaps below.
//
// A member joins with a share of 0 (its quota is created only if missing)
// and gets what is free; a member that leaves loses its quota, and its share
// goes back to the pool. A budget lowered below what members use evicts
// nothing: every share becomes its member's use, new pods are refused
// until use drops, and the members' condition is False with reason
// OverBudget. A member with a refused workload that gets nothing is Waiting
// ("waiting for headroom in budget ...") with its share and use. Apply only
// reads and reports; it writes nothing that could race the balancer.
//
// Metrics: profilekit_budget_hard, _shares, _used and _headroom (by budget
// and resource), _members and _blocked_members (by budget),
// profilekit_budget_writes_total (by budget, operation and result) and
// profilekit_budget_rebalances_total.
//
// # Gaps
//
//   - The API server's quota admission can admit about one pod past a
//     namespace's own quota while pods are created in it and the quota
//     controller recounts it at the same moment (kubernetes/kubernetes#123434:
//     the recount can miss a pod admitted a moment before). The balancer
//     never changes a busy quota, so its own changes do not set that off,
//     but a recount for another reason (a pod deleted, the periodic resync)
//     still can; the team can then be over by that pod until use drops. A
//     tenant can reach it on purpose, creating pods the moment others are
//     deleted: the load test's adversary got one pod of 100m past a budget
//     of 6 CPUs this way, with the shares never above the budget. The load
//     test checks the balancer's promise (the quotas never allow more than
//     the budget) at every sample and reports pods past the budget while
//     the quotas allow no more apart; before it did, its ordinary workloads
//     once stood at 6300m under the load of a full test run, with nothing
//     recorded to tell which it was.
//   - A namespace is bound by its quota only once the quota controller has
//     filled in the quota's status: between the quota's creation and then
//     (usually milliseconds), and before the quota exists at all, pods in a
//     new member's namespace are not counted. A member that joins with
//     pods already running counts in full: the team may be over budget, and
//     is then handled as a budget lowered below use.
//   - First shares and every raise wait for the quota controller (its
//     client rate is kube-controller-manager's --kube-api-qps, 20 by
//     default) and for every member's quota to be synced; if the quota
//     controller is down, nothing is raised.
//   - A tenant can forge FailedCreate Events in its own namespace: that
//     asks for headroom the budget has, at most a grant beyond its use at a
//     time, and never takes a share below use or the team past its budget.
//   - The standalone host's condition for a member in good standing is
//     "Applied: ..."; the share and use show only when it waits or is over,
//     and in the metrics. The upstream adapter runs no Runner: there the
//     plugin reports that it waits for the balancer.
//
// # Host configuration
//
// A lab of 20 Profiles (labelled lab: vision) sharing 16 GPUs, with CPU and
// memory to go with them; a member that asks gets 2 GPUs at a time:
//
//	budgets:
//	  enabled: all
//	  defaults:
//	    budgets:
//	    - name: vision-lab
//	      profileSelector:
//	        matchLabels: {lab: vision}
//	      hard:
//	        requests.nvidia.com/gpu: "16"
//	        requests.cpu: "128"
//	        requests.memory: 1Ti
//	        count/pods: "400"
//	      grant:
//	        requests.nvidia.com/gpu: "2"
//	        requests.cpu: "16"
//	        requests.memory: 128Gi
//
// Each grant left out is a tenth of hard, rounded up. Set a grant of at
// least the largest single pod's request: a refused pod asks for one grant
// at a time.
//
// # Stability
//
// Experimental, and free to change in a minor release: [Kind],
// [Definition], [Option], [WithQuietPeriod], [Plugin], [Config],
// [NewConfig] and [Budget] with the JSON names of their fields,
// [QuotaName], [QuotaPrefix], [LabelBudget], [ReasonOverBudget], the
// condition BudgetsReady and the balancer's rules.
package budgets
