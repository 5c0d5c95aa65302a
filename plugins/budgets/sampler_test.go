package budgets_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/budgets"
)

// wait is a refused workload: since when, for which resources, with pods of
// how much CPU.
type wait struct {
	since     time.Time
	resources []corev1.ResourceName
	podCPU    int64
}

// exceeded returns the resources a quota refusal names.
func exceeded(err error) []corev1.ResourceName {
	_, rest, _ := strings.Cut(err.Error(), ", requested: ")
	requested, _, _ := strings.Cut(rest, ", used: ")
	var out []corev1.ResourceName
	for _, kv := range strings.Split(requested, ",") {
		if k, _, ok := strings.Cut(kv, "="); ok {
			out = append(out, corev1.ResourceName(k))
		}
	}
	return out
}

// sampler watches the sum of what the members use.
type sampler struct {
	c      client.Client
	budget string
	start  time.Time

	mu sync.Mutex
	// headroom is each member's held less its use in the last sample, by
	// resource, and free what no member holds.
	headroom map[string]corev1.ResourceList
	free     corev1.ResourceList
	// used and changed are each member's use and when it last changed.
	used    map[string]corev1.ResourceList
	changed map[string]time.Time
	// idleSince is, for each waiting workload, since when another member
	// has held slack.
	idleSince map[string]time.Time
}

// run samples until ctx ends, and calls over at each overspend.
func (s *sampler) run(ctx context.Context, res *loadResult, over func()) {
	for ctx.Err() == nil {
		var quotas corev1.ResourceQuotaList
		if err := s.c.List(ctx, &quotas, client.MatchingLabels{budgets.LabelBudget: s.budget}); err != nil {
			continue
		}
		members := map[string]bool{}
		headroom := map[string]corev1.ResourceList{}
		held := map[corev1.ResourceName]int64{}
		for _, q := range quotas.Items {
			members[q.Namespace] = true
			headroom[q.Namespace] = corev1.ResourceList{}
			for r := range loadHard {
				spec, enforced, used := q.Spec.Hard[r], q.Status.Hard[r], q.Status.Used[r]
				h := max(spec.MilliValue(), enforced.MilliValue(), used.MilliValue())
				held[r] += h
				headroom[q.Namespace][r] = *resource.NewMilliQuantity(h-used.MilliValue(), resource.DecimalSI)
			}
		}
		var pods corev1.PodList
		if err := s.c.List(ctx, &pods, client.MatchingLabels{"budgets.test/pod": "yes"}); err != nil {
			continue
		}
		// The quotas again, after the pods: a member whose pods are past
		// its quota as it stands after them was admitted past it.
		var after corev1.ResourceQuotaList
		if err := s.c.List(ctx, &after, client.MatchingLabels{budgets.LabelBudget: s.budget}); err != nil {
			continue
		}
		sum, count := int64(0), int64(0)
		podsOf := map[string]corev1.ResourceList{}
		for _, p := range pods.Items {
			if members[p.Namespace] && p.DeletionTimestamp == nil {
				r := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
				sum += r.MilliValue()
				count++
				podsOf[p.Namespace] = addPod(podsOf[p.Namespace], r.MilliValue())
			}
		}
		s.mu.Lock()
		s.headroom, s.free = headroom, corev1.ResourceList{}
		for r, q := range loadHard {
			s.free[r] = *resource.NewMilliQuantity(q.MilliValue()-held[r], resource.DecimalSI)
		}
		if s.used == nil {
			s.used, s.changed = map[string]corev1.ResourceList{}, map[string]time.Time{}
		}
		for _, q := range quotas.Items {
			if v, ok := s.used[q.Namespace]; !ok || !equalUse(v, q.Status.Used) {
				s.used[q.Namespace], s.changed[q.Namespace] = q.Status.Used, time.Now()
			}
		}
		s.mu.Unlock()
		s.watchIdle(res)
		res.mu.Lock()
		res.samples++
		res.maxSum = max(res.maxSum, sum)
		res.maxPods = max(res.maxPods, count)
		at := time.Since(s.start)
		ours := func(what string) {
			if len(res.overspends) == 0 {
				res.firstOver = at
			}
			res.overspends = append(res.overspends, fmt.Sprintf("%.2fs: %s", at.Seconds(), what))
		}
		allowed, allowedAfter := allowedBy(quotas.Items), allowedBy(after.Items)
		promise := exceeds(allowed) || exceeds(allowedAfter)
		if promise {
			// The balancer's own promise: the quotas never allow more.
			ours(fmt.Sprintf("the members' quotas allow %s, %s after (budget %dm, %d pods)", show(allowed), show(allowedAfter), loadCPU, loadPods))
		}
		if sum > loadCPU || count > loadPods {
			pods := fmt.Sprintf("members have %d pods (budget %d) requesting %dm (budget %dm)", count, loadPods, sum, loadCPU)
			if res.podsOver == "" {
				res.podsOver = fmt.Sprintf("%.2fs: %s", at.Seconds(), pods)
			}
			past := pastOwnQuota(after.Items, podsOf)
			switch {
			case promise || len(past) == 0:
				ours(pods)
			default:
				// The quotas allowed no more than the budget before and
				// after: the API server admitted pods past a member's own
				// quota.
				res.raced = append(res.raced, fmt.Sprintf("%.2fs: %s while their quotas allow %s; past its own quota: %s",
					at.Seconds(), pods, show(allowedAfter), strings.Join(past, "; ")))
			}
			over()
		}
		res.mu.Unlock()
		sleep(ctx, 20*time.Millisecond)
	}
}

// addPod adds a pod of cpu millicores to a member's pods.
func addPod(l corev1.ResourceList, cpu int64) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	c, n := l[corev1.ResourceRequestsCPU], l["count/pods"]
	l[corev1.ResourceRequestsCPU] = *resource.NewMilliQuantity(c.MilliValue()+cpu, resource.DecimalSI)
	l["count/pods"] = *resource.NewQuantity(n.Value()+1, resource.DecimalSI)
	return l
}

// quotaAllows is what a member's quota allows of r: the larger of what the
// balancer wrote and what the API server enforces.
func quotaAllows(q *corev1.ResourceQuota, r corev1.ResourceName) int64 {
	spec, enforced := q.Spec.Hard[r], q.Status.Hard[r]
	return max(spec.MilliValue(), enforced.MilliValue())
}

// allowedBy sums what the members' quotas allow, by resource, in
// millis.
func allowedBy(quotas []corev1.ResourceQuota) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for i := range quotas {
		for r := range loadHard {
			out[r] += quotaAllows(&quotas[i], r)
		}
	}
	return out
}

// exceeds reports whether allowed is above the budget.
func exceeds(allowed map[corev1.ResourceName]int64) bool {
	for r, q := range loadHard {
		if allowed[r] > q.MilliValue() {
			return true
		}
	}
	return false
}

func show(allowed map[corev1.ResourceName]int64) string {
	return fmt.Sprintf("%dm and %d pods", allowed[corev1.ResourceRequestsCPU], allowed["count/pods"]/1000)
}

// pastOwnQuota names the members whose pods are past what their quota
// allows.
func pastOwnQuota(quotas []corev1.ResourceQuota, podsOf map[string]corev1.ResourceList) []string {
	var out []string
	for i := range quotas {
		q := &quotas[i]
		for r := range loadHard {
			have := podsOf[q.Namespace][r]
			if allows := quotaAllows(q, r); have.MilliValue() > allows {
				out = append(out, fmt.Sprintf("%s %s %s of %s", q.Namespace, r, have.String(), resource.NewMilliQuantity(allows, resource.DecimalSI).String()))
			}
		}
	}
	return out
}

// slackBesides reports whether, in the last sample, for every resource w
// was refused for, a pod's worth was free or held as headroom by another
// member whose use had not changed for the quiet period: headroom the
// balancer may move. A member busy filling its own headroom has none to
// give.
func (s *sampler) slackBesides(ns string, w wait) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slackBesidesLocked(ns, w)
}

// watchIdle follows, for every waiting workload, the stretch during which
// other members hold slack; one longer than 5 s is a failure.
func (s *sampler) watchIdle(res *loadResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res.mu.Lock()
	defer res.mu.Unlock()
	if s.idleSince == nil {
		s.idleSince = map[string]time.Time{}
	}
	now := time.Now()
	for ns, since := range s.idleSince {
		w, waiting := res.waiting[ns]
		if slack, _ := s.slackBesidesLocked(ns, w); !waiting || !slack {
			res.idle = append(res.idle, now.Sub(since))
			delete(s.idleSince, ns)
		}
	}
	for ns, w := range res.waiting {
		if since, ok := s.idleSince[ns]; ok {
			if d := now.Sub(since); d > headroomTarget {
				_, why := s.slackBesidesLocked(ns, w)
				res.late = append(res.late, fmt.Sprintf("%s waited %s for %v while %s", ns, d.Round(time.Millisecond), w.resources, why))
				s.idleSince[ns] = now
			}
			continue
		}
		if slack, _ := s.slackBesidesLocked(ns, w); slack {
			s.idleSince[ns] = now
		}
	}
}

func (s *sampler) slackBesidesLocked(ns string, w wait) (bool, string) {
	var why []string
	for _, r := range w.resources {
		unit := int64(1000)
		if r == corev1.ResourceRequestsCPU {
			unit = w.podCPU
		}
		found := ""
		if free := s.free[r]; free.MilliValue() >= unit {
			found = fmt.Sprintf("%s: %s free", r, free.String())
		}
		for m, h := range s.headroom {
			if q := h[r]; found == "" && m != ns && q.MilliValue() >= unit && time.Since(s.changed[m]) >= time.Second {
				found = fmt.Sprintf("%s: %s held %s unused, its use unchanged for %s", r, m, q.String(), time.Since(s.changed[m]).Round(time.Millisecond))
			}
		}
		if found == "" {
			return false, ""
		}
		why = append(why, found)
	}
	return len(why) > 0, strings.Join(why, "; ")
}

func equalUse(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
