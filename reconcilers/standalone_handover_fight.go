package reconcilers

// This file holds how the Reconciler stops handing the upstream finalizer
// over while another controller (the upstream profile controller, still
// running) puts it back: it remembers each hand-over on the Profile,
// leaves a finalizer that came back in place for a back-off, says so, and
// hands it over again by itself once the back-off has passed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

const (
	// AnnotationHandedOver is the time (RFC 3339) at which the host last
	// took the upstream finalizer off the Profile. It is written in the same
	// patch that takes the finalizer off, so that a finalizer seen on a
	// Profile that carries it was put back by someone else.
	AnnotationHandedOver = "profilekit.dev/finalizer-handed-over"
	// AnnotationFinalizerReturns is how many times in a row the finalizer
	// came back after a hand-over, before the last one: it sets the
	// back-off (see HandOverBackoff).
	AnnotationFinalizerReturns = "profilekit.dev/finalizer-returns"
	// ConditionFinalizerHandOver is False while the host leaves the upstream
	// finalizer on a Profile because another controller put it back; it
	// goes once a hand-over held. Ready does not count it.
	ConditionFinalizerHandOver = "FinalizerHandOver"
	// ReasonFinalizerReturned is the reason of the condition and of its
	// Warning Event.
	ReasonFinalizerReturned = "FinalizerReturned"
)

const (
	// HandOverBackoff is how long the host leaves a finalizer that came
	// back after its first hand-over before it hands it over again; each
	// further return doubles it, up to MaxHandOverBackoff. A return that
	// comes after the hand-over held for a whole back-off starts again from
	// HandOverBackoff.
	HandOverBackoff = 30 * time.Second
	// MaxHandOverBackoff bounds the back-off: beside a controller that
	// never stops, the host hands the finalizer over about twice an hour.
	MaxHandOverBackoff = 30 * time.Minute
	// handOverCheck is how often the Reconciler looks for Profiles whose
	// back-off has passed, or whose hand-over has held long enough to
	// clear the condition.
	handOverCheck = 5 * time.Second
	// handOverHeld is how long a hand-over must hold before the condition
	// goes.
	handOverHeld = 2 * handOverCheck
)

var (
	finalizerReturnsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_finalizer_returns_total",
		Help: "Times the host found the upstream controller's finalizer put back on a Profile after it handed it over, and stopped handing it over for a back-off: another controller serves the Profile too.",
	}, []string{"plugin"})
	finalizersHeldBack = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_finalizer_held_back_profiles",
		Help: "Profiles that carry the upstream controller's finalizer again after the host handed it over, by plugin: while above 0, another controller serves them.",
	}, []string{"plugin"})
)

func init() {
	metrics.Registry.MustRegister(finalizerReturnsTotal, finalizersHeldBack)
}

// handOverState is what the Profile's annotations say of the last
// hand-over.
type handOverState struct {
	at      time.Time
	returns int
}

// handOverStateOf returns p's last hand-over; false when the host never
// handed the finalizer over (or the annotation cannot be read, which only
// makes the host hand over as if for the first time).
func handOverStateOf(p *kubeflowv1.Profile) (handOverState, bool) {
	at, err := time.Parse(time.RFC3339, p.Annotations[AnnotationHandedOver])
	if err != nil {
		return handOverState{}, false
	}
	n, _ := strconv.Atoi(p.Annotations[AnnotationFinalizerReturns])
	return handOverState{at: at, returns: max(0, n)}, true
}

// backoff returns how long a finalizer that came back after s's hand-over
// is left in place.
func (s handOverState) backoff() time.Duration {
	d := HandOverBackoff
	for range min(s.returns, 16) {
		d *= 2
	}
	return min(d, MaxHandOverBackoff)
}

// due returns when the finalizer is handed over again.
func (s handOverState) due() time.Time { return s.at.Add(s.backoff()) }

// handOverOrHold takes fin off p, a Profile not being deleted that may lose
// it (handOverDue), unless it came back after an earlier hand-over and the
// back-off has not passed: then it stays, and the Profile says why.
func (r *Reconciler) handOverOrHold(ctx context.Context, p *kubeflowv1.Profile, fin string) error {
	last, handed := handOverStateOf(p)
	now := time.Now()
	if !handed {
		return r.patchHandOver(ctx, p, fin, now, 0)
	}
	if now.Before(last.due()) {
		return r.holdFinalizer(ctx, p, fin)
	}
	returns := last.returns + 1
	if _, putBack, err := r.finalizerWriter(ctx, p, fin); err != nil {
		return err
	} else if !putBack.IsZero() && putBack.Sub(last.at) >= last.backoff() {
		// The last hand-over held for a whole back-off: a new episode.
		returns = 0
	}
	return r.patchHandOver(ctx, p, fin, now, returns)
}

// patchHandOver takes fin off p and records the hand-over, in one merge
// patch guarded by the resource version.
func (r *Reconciler) patchHandOver(ctx context.Context, p *kubeflowv1.Profile, fin string, at time.Time, returns int) error {
	own(p)
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(p, fin)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationHandedOver] = at.UTC().Format(time.RFC3339)
	if returns > 0 {
		p.Annotations[AnnotationFinalizerReturns] = strconv.Itoa(returns)
	} else {
		delete(p.Annotations, AnnotationFinalizerReturns)
	}
	if err := r.client.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("hand over finalizer %s: %w", fin, err)
	}
	return nil
}

// holdFinalizer leaves fin on p and reports it, once: the condition, a
// Warning Event naming the field manager that put it back, the metric.
func (r *Reconciler) holdFinalizer(ctx context.Context, p *kubeflowv1.Profile, fin string) error {
	if c := plugins.FindCondition(p.Status.Conditions, ConditionFinalizerHandOver); c != nil && c.Status == plugins.ConditionFalse {
		return nil
	}
	manager, _, err := r.finalizerWriter(ctx, p, fin)
	if err != nil {
		return err
	}
	if manager == "" {
		manager = "unknown"
	}
	msg := fmt.Sprintf("%s: %s came back after the host handed it over: field manager %q put it back, so another controller "+
		"(the upstream profile controller, most likely) serves this Profile too. The host leaves the finalizer in place and hands it over "+
		"again after a back-off (%s, doubling up to %s); stop the other controller (examples/host/docs/moveover.md, step 2) and the host hands it over by itself",
		ReasonFinalizerReturned, fin, manager, HandOverBackoff, MaxHandOverBackoff)
	changed, err := r.setHandOverCondition(ctx, p, &kubeflowv1.ProfileCondition{
		Type: ConditionFinalizerHandOver, Status: plugins.ConditionFalse, Message: msg, ObservedGeneration: p.Generation,
	})
	if changed {
		finalizerReturnsTotal.WithLabelValues(r.def.Kind()).Inc()
		r.recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonFinalizerReturned, "HandOver", "%s", msg)
	}
	return err
}

// clearHandOver removes the condition from p, which no longer carries fin,
// once the last hand-over held for handOverHeld.
func (r *Reconciler) clearHandOver(ctx context.Context, p *kubeflowv1.Profile, fin string) error {
	last, handed := handOverStateOf(p)
	if controllerutil.ContainsFinalizer(p, fin) || plugins.FindCondition(p.Status.Conditions, ConditionFinalizerHandOver) == nil ||
		(handed && time.Since(last.at) < handOverHeld) {
		return nil
	}
	_, err := r.setHandOverCondition(ctx, p, nil)
	return err
}

// setHandOverCondition sets (nil: removes) the FinalizerHandOver condition
// on p when it changes, through the StatusWriter when the host has one. It
// reports whether it changed.
func (r *Reconciler) setHandOverCondition(ctx context.Context, p *kubeflowv1.Profile, c *kubeflowv1.ProfileCondition) (bool, error) {
	next := func(conds []kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
		if c == nil {
			return removeCondition(conds, ConditionFinalizerHandOver)
		}
		return setCondition(conds, *c)
	}
	if _, changed := next(p.Status.Conditions); !changed {
		return false, nil
	}
	if r.status != nil {
		r.status.setOf(p, ConditionFinalizerHandOver, c)
		return true, nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var live kubeflowv1.Profile
		if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(p), &live); err != nil {
			return err
		}
		conds, changed := next(live.Status.Conditions)
		if !changed {
			return nil
		}
		live.Status.Conditions = conds
		return r.client.Status().Update(ctx, &live)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return true, fmt.Errorf("write %s condition: %w", ConditionFinalizerHandOver, err)
	}
	return true, nil
}

// finalizerWriter reads p from the API server (the cache keeps no managed
// fields of Profiles) and returns the field manager that holds fin in its
// finalizers, and when that manager last wrote; "" when none does. A name
// that any client can choose, it only tells the admin where to look.
func (r *Reconciler) finalizerWriter(ctx context.Context, p *kubeflowv1.Profile, fin string) (string, time.Time, error) {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(kubeflowv1.GroupVersion.WithKind("Profile"))
	if err := r.apiReader.Get(ctx, types.NamespacedName{Name: p.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return "", time.Time{}, nil
		}
		return "", time.Time{}, fmt.Errorf("read profile %s: %w", p.Name, err)
	}
	key := fmt.Sprintf("v:%q", fin)
	for _, m := range live.ManagedFields {
		if m.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Finalizers map[string]json.RawMessage `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(m.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields.Metadata.Finalizers[key]; ok {
			var at time.Time
			if m.Time != nil {
				at = m.Time.Time
			}
			return m.Manager, at, nil
		}
	}
	return "", time.Time{}, nil
}

// handOverSource looks at the cached Profiles every handOverCheck and
// enqueues those whose back-off has passed and those whose hand-over held
// long enough to clear the condition; it sets the held-back gauge. One
// timer per controller, as the resync, rather than a delayed requeue per
// Profile.
func (r *Reconciler) handOverSource(fin string) source.TypedSource[reconcile.Request] {
	return source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			tick := time.NewTicker(handOverCheck)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if err := r.checkHandOvers(ctx, q, fin); err != nil && !errors.Is(err, context.Canceled) {
					log.FromContext(ctx).Error(err, "look for Profiles whose finalizer hand-over is due", "plugin", r.def.Kind())
				}
			}
		}()
		return nil
	})
}

// checkHandOvers is one look of handOverSource.
func (r *Reconciler) checkHandOvers(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], fin string) error {
	var list kubeflowv1.ProfileList
	if err := r.client.List(ctx, &list, client.MatchingLabelsSelector{Selector: r.shard}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	now := time.Now()
	held := 0
	for i := range list.Items {
		p := &list.Items[i]
		last, handed := handOverStateOf(p)
		if !handed || !p.DeletionTimestamp.IsZero() {
			continue
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
		switch {
		case controllerutil.ContainsFinalizer(p, fin):
			held++
			if !now.Before(last.due()) && r.handOverDue(p) {
				r.wakes.ask(req.Name, triggerHandOver)
				enqueueLow(q, req)
			}
		case plugins.FindCondition(p.Status.Conditions, ConditionFinalizerHandOver) != nil && now.Sub(last.at) >= handOverHeld:
			r.wakes.ask(req.Name, triggerHandOver)
			enqueueLow(q, req)
		}
	}
	finalizersHeldBack.WithLabelValues(r.def.Kind()).Set(float64(held))
	return nil
}
