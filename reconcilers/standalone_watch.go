package reconcilers

// This file holds the Reconciler's setup: what wakes it (Profiles, the
// plugin's own objects, the kinds it watches, the resync timer) and how each
// maps to a Profile.

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// SetupWithManager registers the controller: Profiles (spec, label and
// deletion changes, not status), the plugin's own objects (by label; not the
// events of its own writes, see ownWrites), the
// kinds it watches (through their map to Profiles) and the resync timer
// (every Profile once per period) wake it. Its queue serves the newest
// Profile first and the resync last (see newestFirst). An owned kind that
// the host's config names (Definition.OwnsFrom) and the cluster does not
// serve is not watched: the plugin reports it where it is wanted, and a
// host started after its CRD watches it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.Name()).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: r.concurrency,
			NewQueue:                newNewestFirstQueue(mgr.GetCache(), mgr.GetLogger(), r.freshWork),
		}).
		For(&kubeflowv1.Profile{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool { return r.shard.Matches(labels.Set(o.GetLabels())) }),
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionChanged(), reverifyChanged(), r.handOverReady()),
			r.notGated(),
			r.wakes.asked(triggerProfile),
		))
	for _, gvk := range r.def.Owns {
		if slices.Contains(r.configured, gvk) {
			served, err := isServed(mgr.GetRESTMapper(), gvk)
			if err != nil {
				return fmt.Errorf("plugin %s: %w", r.def.Kind(), err)
			}
			if !served {
				mgr.GetLogger().Info("the cluster does not serve a kind the plugin's config names; not watched until the host starts again",
					"plugin", r.def.Kind(), "kind", gvk.String())
				continue
			}
		}
		obj, err := apply.NewObject(r.scheme, gvk)
		if err != nil {
			return err
		}
		if slices.Contains(metadataOnly(r.def, r.whole...), gvk) {
			obj = apply.NewMetadata(gvk)
		}
		b = b.Watches(obj, r.wakes.enqueued(triggerOwned+gvk.Kind, handler.EnqueueRequestsFromMapFunc(toProfile(r.def.Kind()))), builder.WithPredicates(r.own.predicate(gvk)))
	}
	if len(r.def.Watches) > 0 {
		if err := r.setupWatches(mgr, b); err != nil {
			return fmt.Errorf("plugin %s: %w", r.def.Kind(), err)
		}
	}
	if r.namespaceGate != nil && !r.def.Upstream {
		b = b.Watches(apply.NewMetadata(namespaceGVK), r.wakes.enqueued(triggerNamespace, handler.EnqueueRequestsFromMapFunc(r.gateWakes(toProfile(plugins.CoreKind)))),
			builder.WithPredicates(gateChanged()))
	}
	b = b.WatchesRawSource(r.resyncSource())
	if fin, _ := r.handedOver(); fin != "" {
		b = b.WatchesRawSource(r.handOverSource(fin))
	}
	if r.staged != nil {
		b = b.WatchesRawSource(r.stagedSource())
	}
	if r.precedence != nil {
		b = b.WatchesRawSource(r.deferredSource())
	}
	if r.def.Runner != nil {
		src, err := r.runner(mgr)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	return b.Complete(r)
}

// runner starts the definition's Runner with the manager and returns the
// channel source through which it enqueues Profiles.
func (r *Reconciler) runner(mgr ctrl.Manager) (source.Source, error) {
	events := make(chan event.GenericEvent, 1024)
	// stopped closes when the manager stops: the controller then no longer
	// reads events, and a send must give up instead of blocking the Runner
	// (and the manager's shutdown) forever.
	stopped := make(chan struct{})
	send := func(e event.GenericEvent) bool {
		select {
		case events <- e:
			return true
		case <-stopped:
			return false
		}
	}
	rt := plugins.Runtime{
		Config:     r.hostConfig,
		RESTConfig: mgr.GetConfig(),
		Reader:     mgr.GetAPIReader(),
		Enqueue: func(names ...string) {
			for _, n := range names {
				if !send(event.GenericEvent{Object: &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: n}}}) {
					return
				}
			}
		},
		// A Profile without a name stands for all of them.
		EnqueueAll: func() { send(event.GenericEvent{Object: &kubeflowv1.Profile{}}) },
	}
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		context.AfterFunc(ctx, func() { close(stopped) })
		if err := r.def.Runner(ctx, rt); err != nil {
			return fmt.Errorf("plugin %s: %w", r.def.Kind(), err)
		}
		return nil
	}))
	if err != nil {
		return nil, err
	}
	return source.Channel(events, r.wakes.enqueued(triggerRunner, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetName() == "" {
			return r.everyProfile(ctx, o)
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	}))), nil
}

// everyProfile returns a request for each cached Profile in the shard.
func (r *Reconciler) everyProfile(ctx context.Context, _ client.Object) []reconcile.Request {
	// The cache's own objects, not copies: only names are read.
	var list kubeflowv1.ProfileList
	if err := r.client.List(ctx, &list, client.MatchingLabelsSelector{Selector: r.shard}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list Profiles", "plugin", r.def.Kind())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return reqs
}

// byName turns a watch's map to Profile names into reconcile requests.
func byName(profiles func(context.Context, client.Object) []string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		names := profiles(ctx, o)
		reqs := make([]reconcile.Request, 0, len(names))
		for _, n := range names {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
		}
		return reqs
	}
}

// deletionChanged passes updates that set a deletion timestamp or change the
// finalizers, which do not always change the generation.
func deletionChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) ||
				len(e.ObjectOld.GetFinalizers()) != len(e.ObjectNew.GetFinalizers())
		},
	}
}

// reverifyChanged passes updates that change the Profile's
// plugins.AnnotationReverify, the manual trigger to verify outside state.
func reverifyChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[plugins.AnnotationReverify] != e.ObjectNew.GetAnnotations()[plugins.AnnotationReverify]
		},
	}
}

// namespaceGVK is the kind of a Profile's namespace, which the core plugin
// owns and so the host caches as metadata only.
var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// toProfile maps an owned object to its Profile by the ownership labels.
func toProfile(kind string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[plugins.LabelManagedBy] != plugins.ManagedByValue || l[plugins.LabelPlugin] != kind || l[plugins.LabelProfile] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: l[plugins.LabelProfile]}}}
	}
}

// isServed reports whether the API server serves gvk, as mapper knows it.
func isServed(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up %s: %w", gvk, err)
	}
	return true, nil
}
