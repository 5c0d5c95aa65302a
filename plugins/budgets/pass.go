package budgets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// member is a Profile a budget's selector matches, and its quota when it
// has one.
type member struct {
	profile *metav1.PartialObjectMetadata
	quota   *corev1.ResourceQuota
}

// budgetPass is one budget's state in one pass and the moves decided.
type budgetPass struct {
	budget  *Budget
	members map[string]*member
	// plans by resource.
	plans map[corev1.ResourceName]plan
	// seats by resource, as planned.
	seats map[corev1.ResourceName][]seat
}

// pass reads everything from the watches, creates the quotas of members
// that have none (share 0), deletes the quotas of Profiles that left, and
// moves headroom: donors' shares are lowered first, and receivers raised
// only once the quota controller enforces the lowered shares, from a fresh
// read of every quota.
func (b *balancer) pass(ctx context.Context) error {
	var profiles metav1.PartialObjectMetadataList
	profiles.SetGroupVersionKind(profileGVK.GroupVersion().WithKind("ProfileList"))
	if err := b.cache.List(ctx, &profiles); err != nil {
		return fmt.Errorf("list profiles: %w", err)
	}
	var quotas corev1.ResourceQuotaList
	if err := b.cache.List(ctx, &quotas); err != nil {
		return fmt.Errorf("list quotas: %w", err)
	}
	now := time.Now()
	var errs []error
	var passes []*budgetPass
	configured := map[string]bool{}
	for i := range b.budgets {
		configured[b.budgets[i].Name] = true
		bp := b.read(&b.budgets[i], profiles.Items, quotas.Items, now)
		errs = append(errs, b.join(ctx, bp)...)
		passes = append(passes, bp)
	}
	// Quotas of budgets the host no longer has: their shares bind nobody.
	for i := range quotas.Items {
		if q := &quotas.Items[i]; !configured[q.Labels[LabelBudget]] {
			errs = append(errs, b.remove(ctx, q.Labels[LabelBudget], q))
		}
	}
	errs = append(errs, b.move(ctx, passes))
	b.report(passes)
	return errors.Join(errs...)
}

// read matches the budget's members with their quotas and plans every
// resource.
func (b *balancer) read(budget *Budget, profiles []metav1.PartialObjectMetadata, quotas []corev1.ResourceQuota, now time.Time) *budgetPass {
	bp := &budgetPass{budget: budget, members: map[string]*member{}, plans: map[corev1.ResourceName]plan{}, seats: map[corev1.ResourceName][]seat{}}
	sel := budget.selector()
	for i := range profiles {
		if p := &profiles[i]; sel.Matches(labels.Set(p.Labels)) {
			bp.members[p.Name] = &member{profile: p}
		}
	}
	var leavers []*corev1.ResourceQuota
	for i := range quotas {
		q := &quotas[i]
		if q.Labels[LabelBudget] != budget.Name || q.Name != QuotaName(budget.Name) {
			continue
		}
		if m, ok := bp.members[q.Namespace]; ok && q.DeletionTimestamp == nil {
			m.quota = q
		} else if !ok {
			leavers = append(leavers, q)
		}
	}
	for _, q := range leavers {
		// A leaver is not a member: its quota goes in join.
		bp.members["\x00"+q.Namespace] = &member{quota: q}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, hard := range budget.Hard {
		var seats []seat
		for _, ns := range slices.Sorted(maps.Keys(bp.members)) {
			m := bp.members[ns]
			if m.profile == nil || m.quota == nil {
				continue
			}
			seats = append(seats, b.seatOf(budget, m.quota, name, now))
		}
		bp.seats[name] = seats
		bp.plans[name] = planShares(toUnits(name, hard), toUnits(name, budget.Grant[name]), seats)
		if p := bp.plans[name]; len(p.Starved) > 0 && b.debug != nil {
			b.debug(budget.Name, name, p, seats)
		}
	}
	return bp
}

// seatOf reads one resource of a member's quota. b.mu is held.
func (b *balancer) seatOf(budget *Budget, q *corev1.ResourceQuota, name corev1.ResourceName, now time.Time) seat {
	s := seat{Name: q.Namespace}
	if v, ok := q.Spec.Hard[name]; ok {
		s.Spec, s.Limited = toUnits(name, v), true
	}
	enforced, hasHard := q.Status.Hard[name]
	used, hasUsed := q.Status.Used[name]
	s.Synced = hasHard && hasUsed
	s.Enforced, s.Used = toUnits(name, enforced), toUnits(name, used)
	changed, seen := b.changed[quotaKey(q)]
	if !seen {
		// A quota not seen change yet (after a restart, say) is busy
		// until it has been quiet for the whole period.
		b.changed[quotaKey(q)], changed = now, now
	}
	s.Quiet = now.Sub(changed) >= b.opts.quiet
	key := q.Namespace + "/" + budget.Name
	if a, ok := b.asks[key]; ok && a.at.After(b.raised[key]) && now.Sub(a.at) < askTTL {
		s.Asked = len(a.resources) == 0 || slices.Contains(a.resources, name)
	}
	return s
}

// join creates the quotas of members that have none and deletes those of
// leavers.
func (b *balancer) join(ctx context.Context, bp *budgetPass) []error {
	var errs []error
	for _, ns := range slices.Sorted(maps.Keys(bp.members)) {
		m := bp.members[ns]
		switch {
		case m.profile == nil:
			errs = append(errs, b.remove(ctx, bp.budget.Name, m.quota))
		case m.quota == nil && m.profile.DeletionTimestamp == nil:
			errs = append(errs, b.create(ctx, bp.budget, m.profile))
		}
	}
	return errs
}

// move lowers, waits for the lowerings to be enforced, and raises, in that
// order; or, in the broken order a test asks for, the other way round.
func (b *balancer) move(ctx context.Context, passes []*budgetPass) error {
	if b.opts.raiseFirst {
		raised, err := b.raise(ctx, passes, false)
		if err != nil || len(raised) > 0 && b.waitEnforced(ctx, raised) != nil {
			return err
		}
		lowered, err := b.lower(ctx, passes)
		return errors.Join(err, b.waitEnforced(ctx, lowered))
	}
	lowered, err := b.lower(ctx, passes)
	if err != nil {
		return err
	}
	if len(lowered) > 0 {
		if err := b.waitEnforced(ctx, lowered); err != nil {
			return err
		}
	}
	_, err = b.raise(ctx, passes, true)
	return err
}

// lower writes every planned lowering and returns the quotas written with
// the shares they now hold.
func (b *balancer) lower(ctx context.Context, passes []*budgetPass) (map[string]corev1.ResourceList, error) {
	written := map[string]corev1.ResourceList{}
	var errs []error
	for _, bp := range passes {
		for _, ns := range slices.Sorted(maps.Keys(bp.members)) {
			m := bp.members[ns]
			if m.profile == nil || m.quota == nil {
				continue
			}
			hard := m.quota.Spec.Hard.DeepCopy()
			if hard == nil {
				hard = corev1.ResourceList{}
			}
			changed := false
			for name, p := range bp.plans {
				target, ok := p.Lower[ns]
				if !ok {
					continue
				}
				if cur, limited := hard[name]; !limited || toUnits(name, cur) > target {
					hard[name] = fromUnits(name, target, bp.budget.Hard[name].Format)
					changed = true
				}
			}
			if !changed {
				continue
			}
			ok, err := b.patch(ctx, bp.budget.Name, "lower", m.quota, hard)
			errs = append(errs, err)
			if ok {
				written[quotaKey(m.quota)] = hard
			}
		}
	}
	return written, errors.Join(errs...)
}

// raise writes the planned raises. With fresh set it first lists every
// budget quota from the API server and raises each member only as far as
// what is free in that read allows; without it, it trusts the plan, which
// counts on the donors' lowerings: the broken order's mistake.
func (b *balancer) raise(ctx context.Context, passes []*budgetPass, fresh bool) (map[string]corev1.ResourceList, error) {
	if !slices.ContainsFunc(passes, func(bp *budgetPass) bool {
		return slices.ContainsFunc(slices.Collect(maps.Values(bp.plans)), func(p plan) bool { return len(p.Raise) > 0 })
	}) {
		return nil, nil
	}
	live := map[string]*corev1.ResourceQuota{}
	if fresh {
		var list corev1.ResourceQuotaList
		if err := b.c.List(ctx, &list, client.MatchingLabelsSelector{Selector: quotaSelector()}); err != nil {
			return nil, fmt.Errorf("list budget quotas: %w", err)
		}
		for i := range list.Items {
			live[quotaKey(&list.Items[i])] = &list.Items[i]
		}
	}
	written := map[string]corev1.ResourceList{}
	var errs []error
	for _, bp := range passes {
		raises := map[string]corev1.ResourceList{}
		for name, p := range bp.plans {
			targets := p.Raise
			if fresh {
				targets = raiseWithin(toUnits(name, bp.budget.Hard[name]), p, b.freshSeats(bp, name, live))
			}
			for ns, target := range targets {
				if raises[ns] == nil {
					raises[ns] = corev1.ResourceList{}
				}
				raises[ns][name] = fromUnits(name, target, bp.budget.Hard[name].Format)
			}
		}
		moved := false
		for _, ns := range slices.Sorted(maps.Keys(raises)) {
			m := bp.members[ns]
			q := m.quota
			if fresh {
				q = live[quotaKey(m.quota)]
			}
			if q == nil {
				continue
			}
			hard := q.Spec.Hard.DeepCopy()
			maps.Copy(hard, raises[ns])
			ok, err := b.patch(ctx, bp.budget.Name, "raise", q, hard)
			errs = append(errs, err)
			if !ok {
				continue
			}
			written[quotaKey(q)] = hard
			b.mu.Lock()
			b.raised[ns+"/"+bp.budget.Name] = time.Now()
			b.mu.Unlock()
			moved = true
		}
		if moved {
			rebalancesTotal.WithLabelValues(bp.budget.Name).Inc()
		}
	}
	return written, errors.Join(errs...)
}

// freshSeats reads one resource of every quota of the budget in live, a
// fresh list: members' and leavers' alike, since a leaver's quota binds
// until it is gone.
func (b *balancer) freshSeats(bp *budgetPass, name corev1.ResourceName, live map[string]*corev1.ResourceQuota) []seat {
	var seats []seat
	for _, key := range slices.Sorted(maps.Keys(live)) {
		q := live[key]
		if q.Labels[LabelBudget] != bp.budget.Name {
			continue
		}
		s := seat{Name: q.Namespace}
		if v, ok := q.Spec.Hard[name]; ok {
			s.Spec, s.Limited = toUnits(name, v), true
		}
		enforced, hasHard := q.Status.Hard[name]
		used, hasUsed := q.Status.Used[name]
		s.Enforced, s.Used, s.Synced = toUnits(name, enforced), toUnits(name, used), hasHard && hasUsed
		seats = append(seats, s)
	}
	return seats
}

// waitEnforced waits until the quota controller has copied every written
// share into its quota's status.hard, where the API server's admission
// reads it, as the watch shows. A quota that is gone no longer waits.
func (b *balancer) waitEnforced(ctx context.Context, written map[string]corev1.ResourceList) error {
	deadline := time.Now().Add(b.opts.settle)
	for key, hard := range written {
		ns, name, _ := strings.Cut(key, "/")
		for {
			var q corev1.ResourceQuota
			err := b.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &q)
			if apierrors.IsNotFound(err) || err == nil && equalLists(q.Status.Hard, hard) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("quota %s: the quota controller has not enforced the new share within %s; raises wait", key, b.opts.settle)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}
