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
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// ReasonOverBudget means that a budget's members hold more than the budget
// (it was lowered below their use): nothing is evicted, and new pods are
// refused until use drops.
const ReasonOverBudget = "OverBudget"

// Plugin reports each Profile's shares of its budgets; its Runner, the
// balancer, makes and moves them. Apply writes nothing, so that nothing
// races the balancer's order of writes.
type Plugin struct {
	st *state
}

var _ plugins.Plugin = Plugin{}

// state is shared by the Runner and Apply of one Definition.
type state struct {
	opts options
	view *view
}

// options are the balancer's timings.
type options struct {
	// quiet is how long a quota's use must stand still before its share
	// changes (see doc.go on kubernetes#123434).
	quiet time.Duration
	// settle bounds the wait for the quota controller to enforce a
	// lowered share.
	settle time.Duration
	// tick is how often the balancer looks without a change; gap is the
	// least time between two passes.
	tick, gap time.Duration
	// raiseFirst breaks the order of a move, for a test that must see the
	// overspend it causes.
	raiseFirst bool
}

// Option changes the balancer's timings.
type Option func(*options)

// WithQuietPeriod sets how long a quota's use must stand still before its
// share changes. Default 1s.
func WithQuietPeriod(d time.Duration) Option { return func(o *options) { o.quiet = d } }

// Definition returns the budgets plugin and its balancer.
func Definition(opts ...Option) plugins.Definition {
	o := options{quiet: time.Second, settle: 10 * time.Second, tick: 250 * time.Millisecond, gap: 20 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	p := Plugin{st: &state{opts: o, view: &view{}}}
	return plugins.Definition{
		Plugin:    p,
		NewConfig: func() any { return NewConfig() },
		Runner:    p.run,
	}
}

// Kind returns "budgets".
func (Plugin) Kind() string { return Kind }

// Apply reports the Profile's share and use in each budget it is a member
// of: Waiting while the balancer has not made its quota yet or has nothing
// to give a member that asked, False (OverBudget) while the budget is held
// beyond its limit, and a Conflict for a quota of our name that is not
// ours. It writes nothing.
func (p Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	ns := plugins.Namespace(req.Profile)
	var res plugins.Result
	var waits []string
	var errs []error
	for i := range cfg.Budgets {
		budget := &cfg.Budgets[i]
		if !budget.selector().Matches(labels.Set(req.Profile.Labels)) {
			continue
		}
		var q corev1.ResourceQuota
		err := req.LiveReader().Get(ctx, client.ObjectKey{Namespace: ns, Name: QuotaName(budget.Name)}, &q)
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("read quota %s: %w", QuotaName(budget.Name), err))
			continue
		}
		if err != nil {
			waits = append(waits, fmt.Sprintf("budget %s: the balancer to make quota %s (it runs in the standalone host)", budget.Name, QuotaName(budget.Name)))
			continue
		}
		if !plugins.IsOwnedBy(q.Labels, Kind, req.Profile.Name) {
			errs = append(errs, plugins.Terminalf(plugins.ReasonConflict, "ResourceQuota %s/%s exists and is not profilekit's; budget %s cannot bind this Profile", ns, q.Name, budget.Name))
			continue
		}
		res.Add(plugins.Change{Kind: "ResourceQuota", Namespace: ns, Name: q.Name, Action: plugins.Unchanged})
		v, _ := p.st.view.budget(budget.Name)
		shares := describe(budget, &q)
		if over := describeOverUse(budget, v.OverUse[ns], v.Admitted[ns]); over != "" {
			shares += "; " + over
		}
		if len(v.Over) > 0 {
			var over []string
			for _, r := range slices.Sorted(maps.Keys(v.Over)) {
				held, hard := fromUnits(r, v.Over[r], budget.Hard[r].Format), budget.Hard[r]
				over = append(over, fmt.Sprintf("%s %s of %s", r, held.String(), hard.String()))
			}
			errs = append(errs, plugins.Terminalf(ReasonOverBudget, "budget %s is over: members hold %s; nothing is evicted, and new pods are refused until use drops (%s)", budget.Name, strings.Join(over, ", "), shares))
			continue
		}
		if starved := v.Starved[ns]; len(starved) > 0 {
			waits = append(waits, fmt.Sprintf("headroom in budget %s for %s: nothing is free and no other member has any to give (%s)", budget.Name, joinNames(starved), shares))
		} else if len(v.OverUse[ns]) > 0 {
			waits = append(waits, fmt.Sprintf("use in budget %s to drop under this member's share: new pods are refused until then (%s)", budget.Name, shares))
		}
	}
	if len(waits) > 0 && len(errs) == 0 {
		res.Wait(30*time.Second, strings.Join(waits, "; "))
	}
	return res, errors.Join(errs...)
}

// describe renders a member's share and use, "requests.cpu share 2, used
// 1500m".
func describe(budget *Budget, q *corev1.ResourceQuota) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(budget.Hard)) {
		share, used := q.Spec.Hard[r], q.Status.Used[r]
		parts = append(parts, fmt.Sprintf("%s share %s, used %s", r, share.String(), used.String()))
	}
	return strings.Join(parts, "; ")
}

// describeOverUse renders what a member uses beyond its share, which
// nothing free covers, and how often the balancer saw the API server admit
// its pods past its enforced share: "over its share: requests.cpu used
// 2100m of 2000m; 1 over-admission by the API server (kubernetes#123434)".
func describeOverUse(budget *Budget, over []overUse, admitted int) string {
	var parts []string
	for _, o := range over {
		used, share := fromUnits(o.Resource, o.Used, budget.Hard[o.Resource].Format), fromUnits(o.Resource, o.Share, budget.Hard[o.Resource].Format)
		parts = append(parts, fmt.Sprintf("%s used %s of %s", o.Resource, used.String(), share.String()))
	}
	if len(parts) == 0 {
		return ""
	}
	s := "over its share: " + strings.Join(parts, ", ")
	if admitted > 0 {
		s += fmt.Sprintf("; %d over-admissions by the API server seen (kubernetes/kubernetes#123434)", admitted)
	}
	return s
}

func joinNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Revoke deletes the Profile's budget quotas, except those of budgets it is
// still a member of: membership is the host's decision, by selector, and a
// Profile that stops listing the plugin must not escape its budgets. A
// Profile being deleted gives up every share.
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	ns := plugins.Namespace(req.Profile)
	var list corev1.ResourceQuotaList
	if err := req.LiveReader().List(ctx, &list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(Kind, req.Profile.Name)}); err != nil {
		return plugins.Result{}, fmt.Errorf("list budget quotas: %w", err)
	}
	member := map[string]bool{}
	if req.Profile.DeletionTimestamp == nil {
		for i := range cfg.Budgets {
			if cfg.Budgets[i].selector().Matches(labels.Set(req.Profile.Labels)) {
				member[QuotaName(cfg.Budgets[i].Name)] = true
			}
		}
	}
	var res plugins.Result
	var errs []error
	for i := range list.Items {
		q := &list.Items[i]
		if member[q.Name] {
			res.Add(plugins.Change{Kind: "ResourceQuota", Namespace: ns, Name: q.Name, Action: plugins.Skipped})
			continue
		}
		if err := req.Client.Delete(ctx, q, client.Preconditions{UID: &q.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete quota %s: %w", q.Name, err))
			continue
		}
		res.Add(plugins.Change{Kind: "ResourceQuota", Namespace: ns, Name: q.Name, Action: plugins.Deleted})
	}
	return res, errors.Join(errs...)
}
