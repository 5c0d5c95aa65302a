package budgets

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The share arithmetic works in whole units of each resource: thousandths
// of a CPU, single bytes, pods or devices. A quota's quantities are whole
// numbers in these units (Validate refuses fractions elsewhere), so nothing
// is lost, and int64 holds 9 exabytes.

// milli reports whether name counts CPU, the one resource that takes
// fractions.
func milli(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU:
		return true
	}
	return false
}

// toUnits returns q in name's units, rounded up.
func toUnits(name corev1.ResourceName, q resource.Quantity) int64 {
	if milli(name) {
		return q.MilliValue()
	}
	return q.Value()
}

// fromUnits returns u units of name as a quantity in format.
func fromUnits(name corev1.ResourceName, u int64, format resource.Format) resource.Quantity {
	if milli(name) {
		return *resource.NewMilliQuantity(u, resource.DecimalSI)
	}
	return *resource.NewQuantity(u, format)
}

// seat is one member of a budget for one resource, as read from its quota.
type seat struct {
	// Name is the member's namespace.
	Name string
	// Spec is the quota's spec.hard: the share. Limited is false when the
	// quota has no limit for the resource yet.
	Spec    int64
	Limited bool
	// Enforced is status.hard, the share the API server's quota admission
	// enforces, and Used is status.used. Synced is false until the quota
	// controller has filled both in.
	Enforced int64
	Used     int64
	Synced   bool
	// Quiet is true when Used has not changed for the quiet period: only
	// quiet quotas are changed (see doc.go on kubernetes#123434).
	Quiet bool
	// Asked is true when a workload in the namespace was refused for this
	// resource by the budget's quota (a FailedCreate Event) since the
	// member last got more.
	Asked bool
}

// held is what a member may be using now or soon: the largest of its
// share, the share still enforced (a lowered share is enforced only once
// the quota controller copies it), and its use. The budget's invariant is
// that members' held sum to at most the budget.
func (s seat) held() int64 { return max(s.Spec, s.Enforced, s.Used) }

func (s seat) headroom() int64 { return s.held() - s.Used }

// allowed is the member's share as far as the API server may enforce it:
// the larger of its spec.hard and status.hard. The budget's promise is that
// members' allowed sum to at most the budget.
func (s seat) allowed() int64 { return max(s.Spec, s.Enforced) }

// plan is the moves for one resource of one budget.
type plan struct {
	// Lower maps a member to its new, lower share; written first.
	Lower map[string]int64
	// Raise maps a member to the share it should get, written only once
	// every lowering is enforced, and then only as far as what is free
	// after a fresh read allows.
	Raise map[string]int64
	// Order is the order in which Raise is served.
	Order []string
	// Held is what members hold together; Over is true when that is more
	// than the budget (a budget lowered below use).
	Held int64
	Over bool
	// Starved lists the members with a refused workload that got
	// nothing: nothing is free and nobody quiet has headroom to give.
	Starved []string
}

// planShares decides the moves for one resource: hard is the budget,
// grant the headroom a member asking gets per move. The promise is that
// the shares (each the larger of spec.hard and status.hard) never sum past
// hard; the rules:
//
//   - A budget held beyond hard (use past it: a budget lowered below use,
//     a member that joined with pods, or pods the API server admitted past
//     a quota, kubernetes#123434) lowers every quiet share above use to its
//     use. Use beyond a share (over-use) is covered only from what the
//     shares leave free; what is not covered stays over-use, which blocks
//     the member's new pods until its use drops. If the shares themselves
//     sum past hard (the budget was lowered), quiet shares are cut, the
//     largest first, until they fit, below use if need be. Nothing is
//     evicted, and nobody gets more.
//   - A member whose quota status is not synced yet freezes the resource:
//     what it holds is unknown, so nobody is raised.
//   - A member asks when its headroom is under grant. It wants grant of
//     headroom; one whose workload was refused (Asked) wants grant more
//     than it holds, since its next pod needs more than it has.
//   - What it wants comes from what is free, then from quiet members'
//     headroom beyond their own grant, and, for refused members only, from
//     the remaining headroom of quiet members none of whose workloads was
//     refused. Shares never go under use.
//   - A share under use is raised to use: what members hold counts the
//     use already, and it is within the budget.
//
// Only quiet members are changed, as donors or receivers. raiseWithin
// checks every raise again against a fresh read.
func planShares(hard, grant int64, seats []seat) plan {
	p := plan{Lower: map[string]int64{}, Raise: map[string]int64{}}
	synced := true
	for _, s := range seats {
		p.Held += s.held()
		synced = synced && s.Synced
		if !s.Limited && s.Quiet {
			// A resource the quota does not limit yet is limited from 0
			// up: a lowering, from no limit at all.
			p.Lower[s.Name] = 0
		}
	}
	if p.Held > hard {
		p.Over = true
		planOver(hard, seats, &p)
		return p
	}
	if !synced {
		return p
	}

	type want struct {
		s    seat
		need int64
	}
	var receivers []want
	for _, s := range seats {
		if !s.Quiet || !s.Limited {
			continue
		}
		target := s.Used + grant
		if s.Asked {
			target = s.held() + grant
		}
		// A refusal makes a member want more than its use needs, but
		// only while it holds less than a grant of headroom: a forged
		// Event cannot make a member hoard.
		if s.headroom() < grant {
			receivers = append(receivers, want{s: s, need: target - s.held()})
		}
	}
	slices.SortFunc(receivers, func(a, b want) int {
		if a.s.Asked != b.s.Asked {
			if a.s.Asked {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.s.headroom(), b.s.headroom()), cmp.Compare(a.s.Name, b.s.Name))
	})
	// Donors, largest headroom first: quiet members. Beyond their own
	// grant they give to anyone who asks; below it, if no workload of
	// theirs was refused, to a refused workload.
	var donors []seat
	for _, s := range seats {
		if s.Quiet && s.Limited && s.headroom() > 0 {
			donors = append(donors, s)
		}
	}
	slices.SortFunc(donors, func(a, b seat) int {
		return cmp.Or(cmp.Compare(b.headroom(), a.headroom()), cmp.Compare(a.Name, b.Name))
	})
	given := map[string]int64{}
	take := func(d seat, floor, need int64) int64 {
		n := min(max(d.headroom()-given[d.Name]-floor, 0), need)
		given[d.Name] += n
		return n
	}

	free := hard - p.Held
	for _, r := range receivers {
		if given[r.s.Name] > 0 {
			// It gave to a refused workload in this pass.
			continue
		}
		got := min(free, r.need)
		free -= got
		for _, d := range donors {
			if d.Name != r.s.Name {
				got += take(d, grant, r.need-got)
			}
		}
		if r.s.Asked {
			for _, d := range donors {
				if _, raised := p.Raise[d.Name]; !raised && !d.Asked {
					got += take(d, 0, r.need-got)
				}
			}
		}
		if got == 0 {
			if r.s.Asked {
				p.Starved = append(p.Starved, r.s.Name)
			}
			continue
		}
		p.Raise[r.s.Name] = r.s.held() + got
		p.Order = append(p.Order, r.s.Name)
	}
	for _, d := range donors {
		if n := given[d.Name]; n > 0 {
			p.Lower[d.Name] = d.held() - n
		}
	}
	for _, s := range seats {
		if _, ok := p.Raise[s.Name]; !ok && s.Quiet && s.Limited && s.Spec < s.Used {
			p.Raise[s.Name] = s.Used
			p.Order = append(p.Order, s.Name)
		}
	}
	return p
}

// planOver plans a resource whose members hold more than hard: lowerings
// only, and raises toward use only within what the shares leave free.
func planOver(hard int64, seats []seat, p *plan) {
	// share is what each member's quota allows once the plan's lowerings
	// are enforced.
	share := map[string]int64{}
	total := int64(0)
	for _, s := range seats {
		share[s.Name] = s.allowed()
		if v, ok := p.Lower[s.Name]; ok {
			share[s.Name] = v
		}
		if s.Quiet && s.Limited && s.Spec > s.Used {
			p.Lower[s.Name], share[s.Name] = s.Used, s.Used
		}
		total += share[s.Name]
	}
	if total > hard {
		// The budget was lowered below the shares: cut the quiet ones to
		// a common level, the largest first, so that they fit.
		var quiet []int64
		fixed := int64(0)
		for _, s := range seats {
			if s.Quiet {
				quiet = append(quiet, share[s.Name])
			} else {
				fixed += share[s.Name]
			}
		}
		level := fillLevel(quiet, hard-fixed)
		for _, s := range seats {
			if s.Quiet && share[s.Name] > level {
				p.Lower[s.Name] = level
			}
		}
		return
	}
	free := hard - total
	for _, s := range seats {
		if cover := min(s.Used-share[s.Name], free); s.Quiet && s.Limited && cover > 0 {
			p.Raise[s.Name] = share[s.Name] + cover
			p.Order = append(p.Order, s.Name)
			free -= cover
		}
	}
}

// fillLevel returns the highest level such that the shares, each capped at
// it, sum to at most room (0 when even that does not fit).
func fillLevel(shares []int64, room int64) int64 {
	if room <= 0 {
		return 0
	}
	lo, hi := int64(0), slices.Max(append(shares, 0))
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		sum := int64(0)
		for _, v := range shares {
			sum += min(v, mid)
		}
		if sum <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// raiseWithin returns the shares to write for p's raises given a fresh read
// of the members: each as far as its planned share, in p's order, within
// two bounds. The shares (what the quotas allow, status.hard included)
// never sum past hard: the budget's promise, which holds whatever the
// plan, an earlier process or the API server's over-admission left. And a
// raise gives a member no headroom beyond what is free of what members
// hold, use included: another member's over-use is not free. A member the
// fresh read no longer shows is left for the next pass.
func raiseWithin(hard int64, p plan, fresh []seat) map[string]int64 {
	byName := map[string]seat{}
	held, shares := int64(0), int64(0)
	for _, s := range fresh {
		if !s.Synced {
			return nil
		}
		byName[s.Name] = s
		held += s.held()
		shares += s.allowed()
	}
	freeShares, freeHeld := hard-shares, hard-held
	out := map[string]int64{}
	for _, name := range p.Order {
		s, ok := byName[name]
		if !ok || !s.Limited {
			continue
		}
		target := min(p.Raise[name], s.allowed()+max(freeShares, 0), s.held()+max(freeHeld, 0))
		if target <= s.Spec {
			continue
		}
		freeShares -= max(target-s.allowed(), 0)
		freeHeld -= max(target-s.held(), 0)
		out[name] = target
	}
	return out
}
