package budgets

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// fieldOwner is the balancer's field manager.
var fieldOwner = client.FieldOwner(plugins.FieldManagerFor(Kind))

// newQuota is a new member's quota: a share of 0 of every resource of the
// budget, ours, owned by the Profile.
func newQuota(budget *Budget, profile *metav1.PartialObjectMetadata) *corev1.ResourceQuota {
	labels := plugins.OwnershipLabels(Kind, profile.Name)
	labels[LabelBudget] = budget.Name
	hard := corev1.ResourceList{}
	for name, q := range budget.Hard {
		hard[name] = fromUnits(name, 0, q.Format)
	}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: profile.Name, // plugins.Namespace: a Profile's namespace has its name
			Name:      QuotaName(budget.Name),
			Labels:    labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile", Name: profile.Name, UID: profile.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}
}

// create makes a new member's quota, with a share of 0: create-only, so it
// never overwrites one that exists. A namespace not there yet is waited
// for.
func (b *balancer) create(ctx context.Context, budget *Budget, profile *metav1.PartialObjectMetadata) error {
	err := b.c.Create(ctx, newQuota(budget, profile), fieldOwner)
	switch {
	case err == nil:
		writesTotal.WithLabelValues(budget.Name, "create", "ok").Inc()
		b.enqueue(profile.Name)
		return nil
	case apierrors.IsAlreadyExists(err):
		// Ours and not in the watch yet, or someone else's, which Apply
		// reports as a Conflict.
		return nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err) && strings.Contains(err.Error(), "being terminated"):
		return nil
	}
	writesTotal.WithLabelValues(budget.Name, "create", "error").Inc()
	return fmt.Errorf("create quota %s/%s: %w", profile.Name, QuotaName(budget.Name), err)
}

// remove deletes the quota of a Profile that left the budget: its share
// goes back to the pool. Preconditions make sure it is this very quota.
func (b *balancer) remove(ctx context.Context, budget string, q *corev1.ResourceQuota) error {
	if q.DeletionTimestamp != nil {
		return nil
	}
	err := b.c.Delete(ctx, q, client.Preconditions{UID: &q.UID})
	if client.IgnoreNotFound(err) != nil {
		writesTotal.WithLabelValues(budget, "delete", "error").Inc()
		return fmt.Errorf("delete quota %s/%s: %w", q.Namespace, q.Name, err)
	}
	writesTotal.WithLabelValues(budget, "delete", "ok").Inc()
	b.enqueue(q.Labels[plugins.LabelProfile])
	return nil
}

// patch sets the quota's spec.hard to hard with a merge patch that carries
// the resourceVersion read: if the quota changed since (a pod admitted,
// which moves status.used), the API server refuses it and the next pass
// decides again from what is there. It reports whether it wrote.
func (b *balancer) patch(ctx context.Context, budget, op string, q *corev1.ResourceQuota, hard corev1.ResourceList) (bool, error) {
	if equalLists(q.Spec.Hard, hard) {
		return false, nil
	}
	next := q.DeepCopy()
	next.Spec.Hard = hard
	err := b.c.Patch(ctx, next, client.MergeFromWithOptions(q, client.MergeFromWithOptimisticLock{}), fieldOwner)
	switch {
	case err == nil:
		writesTotal.WithLabelValues(budget, op, "ok").Inc()
		log.FromContext(ctx).V(1).Info("share written", "op", op, "quota", klog.KObj(q), "from", q.Spec.Hard, "to", hard, "used", q.Status.Used)
		return true, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		writesTotal.WithLabelValues(budget, op, "conflict").Inc()
		b.poke()
		return false, nil
	}
	writesTotal.WithLabelValues(budget, op, "error").Inc()
	return false, fmt.Errorf("%s quota %s/%s: %w", op, q.Namespace, q.Name, err)
}

// report publishes the pass for Apply and the metrics, and enqueues the
// Profiles whose report changed.
func (b *balancer) report(passes []*budgetPass) {
	views := map[string]budgetView{}
	reports := map[string][]string{}
	b.mu.Lock()
	seen := map[string]seenSeat{}
	for _, bp := range passes {
		name := bp.budget.Name
		v := budgetView{Over: map[corev1.ResourceName]int64{}, Starved: map[string][]corev1.ResourceName{}, OverUse: map[string][]overUse{}, Admitted: map[string]int{}}
		overused := map[string]bool{}
		members := 0
		for _, m := range bp.members {
			if m.profile != nil {
				members++
			}
		}
		for _, res := range slices.Sorted(maps.Keys(bp.plans)) {
			p := bp.plans[res]
			var shares, used, over int64
			for _, s := range bp.seats[res] {
				shares += s.Spec
				used += s.Used
				reports[s.Name] = append(reports[s.Name], fmt.Sprintf("%s/%s=%d", name, res, s.Spec))
				if !s.Synced {
					continue
				}
				if n := s.Used - s.allowed(); n > 0 {
					over += n
					overused[s.Name] = true
					v.OverUse[s.Name] = append(v.OverUse[s.Name], overUse{Resource: res, Used: s.Used, Share: s.allowed()})
					reports[s.Name] = append(reports[s.Name], fmt.Sprintf("overuse:%s/%s=%d", name, res, s.Used))
				}
				if n := b.overAdmitted(seen, name, res, bp.members[s.Name].quota, s); n > 0 {
					overAdmittedTotal.WithLabelValues(name, string(res)).Add(float64(n) / unitsPerOne(res))
				}
			}
			if p.Over {
				v.Over[res] = p.Held
				for _, s := range bp.seats[res] {
					reports[s.Name] = append(reports[s.Name], "over:"+name)
				}
			}
			for _, ns := range p.Starved {
				v.Starved[ns] = append(v.Starved[ns], res)
				reports[ns] = append(reports[ns], "starved:"+name+"/"+string(res))
			}
			hard := toUnits(res, bp.budget.Hard[res])
			l := []string{name, string(res)}
			hardGauge.WithLabelValues(l...).Set(float64(hard) / unitsPerOne(res))
			sharesGauge.WithLabelValues(l...).Set(float64(shares) / unitsPerOne(res))
			usedGauge.WithLabelValues(l...).Set(float64(used) / unitsPerOne(res))
			headroomGauge.WithLabelValues(l...).Set(float64(hard-p.Held) / unitsPerOne(res))
			overuseGauge.WithLabelValues(l...).Set(float64(over) / unitsPerOne(res))
		}
		for ns := range overused {
			v.Admitted[ns] = b.admitted[ns+"/"+name]
		}
		overusedGauge.WithLabelValues(name).Set(float64(len(overused)))
		membersGauge.WithLabelValues(name).Set(float64(members))
		blockedGauge.WithLabelValues(name).Set(float64(len(v.Starved)))
		views[name] = v
	}
	b.seen = seen
	b.mu.Unlock()
	b.view.set(views)
	var changed []string
	b.mu.Lock()
	for ns, r := range reports {
		s := strings.Join(r, " ")
		if b.reported[ns] != s {
			b.reported[ns] = s
			changed = append(changed, ns)
		}
	}
	b.mu.Unlock()
	slices.Sort(changed)
	b.enqueue(changed...)
}

// overAdmitted records one resource of a member's quota in seen and
// returns how far its use grew past the share the API server enforced
// since the last pass (kubernetes/kubernetes#123434), counting it as an
// over-admission of the member. Use past a share that was cut, or in a
// quota not seen synced before (a member that joined with pods, a host
// that just started), is not an over-admission. b.mu is held.
func (b *balancer) overAdmitted(seen map[string]seenSeat, budget string, res corev1.ResourceName, q *corev1.ResourceQuota, s seat) int64 {
	if q == nil {
		return 0
	}
	key := s.Name + "/" + budget + "/" + string(res)
	now := seenSeat{uid: string(q.UID), used: s.Used, enforced: s.Enforced}
	seen[key] = now
	prev, ok := b.seen[key]
	if !ok || prev.uid != now.uid || now.enforced < prev.enforced {
		return 0
	}
	n := now.used - max(prev.used, now.enforced)
	if n > 0 {
		b.admitted[s.Name+"/"+budget]++
	}
	return max(n, 0)
}

// unitsPerOne is how many of the arithmetic's units make one of the
// resource, for metrics in the resource's own unit.
func unitsPerOne(name corev1.ResourceName) float64 {
	if milli(name) {
		return 1000
	}
	return 1
}
