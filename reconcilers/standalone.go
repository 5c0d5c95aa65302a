package reconcilers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Reconciler runs one plugin for every Profile it applies to.
type Reconciler struct {
	def plugins.Definition
	own *ownWrites
	// wakes counts what asked for each pass.
	wakes *wakes
	// configs are the plugin's decoded configs.
	configs configs
	// repairs bounds how often an object another writer keeps changing
	// is put back.
	repairs    *repairs
	client     client.Client
	apiReader  client.Reader
	scheme     *runtime.Scheme
	recorder   events.EventRecorder
	defaults   []byte
	hostConfig any

	enabledForAll bool
	selector      labels.Selector
	shard         labels.Selector
	resync        time.Duration
	timeout       time.Duration
	retention     plugins.Retention
	concurrency   int
	firstPass     *FirstPass

	outside outside.Options
	// records are the outside-state records written and not yet shown by
	// the cache.
	records *outside.Records

	// status, when set, gathers condition writes with other plugins'.
	status *StatusWriter

	// precedence, when set, makes passes that only confirm wait for urgent
	// ones; recent tells whether this plugin's passes have been writing.
	precedence *Precedence
	recent     recentWrites
	// fresh hands a waiting confirmation's worker to new work (freshWork);
	// deferrals remembers since when the confirmations that gave theirs
	// up have waited.
	fresh     chan struct{}
	deferrals deferrals

	// namespaceGate, when set, says which Profiles' namespaces the core
	// plugin makes; the plugin waits for those (see WithNamespaceGate).
	namespaceGate func(*kubeflowv1.Profile) bool

	// watched caches the definition's Watches; nil when it has none.
	watched client.Reader

	// whole are kinds other plugins of the host read whole (WithCachedWhole).
	whole []schema.GroupVersionKind

	// configured are the kinds of def.Owns that its OwnsFrom named for the
	// host's config (see plugins.Definition.ForHost).
	configured []schema.GroupVersionKind

	// staged, when set, serves each Profile with the stable or the
	// candidate settings of a staged rollout (see WithStaged).
	staged *staging

	// applierOptions are the options of every pass's Applier but its
	// write observer, made once.
	applierOptions []apply.Option
}

// New returns a Reconciler for def on mgr. It decodes and validates the host's
// defaults now, so that a host with bad configuration does not start, and
// runs def as plugins.Definition.ForHost returns it for them: the kinds its
// OwnsFrom names are owned like those in Owns.
func New(mgr ctrl.Manager, def plugins.Definition, opts ...Option) (*Reconciler, error) {
	r := &Reconciler{
		def:         def,
		own:         newOwnWrites(),
		wakes:       newWakes(def.Kind()),
		repairs:     newRepairs(def.Kind()),
		records:     outside.NewRecords(),
		client:      mgr.GetClient(),
		apiReader:   mgr.GetAPIReader(),
		scheme:      mgr.GetScheme(),
		selector:    labels.Everything(),
		shard:       labels.Everything(),
		resync:      DefaultResync,
		timeout:     DefaultRequestTimeout,
		retention:   plugins.RetentionRetain,
		concurrency: DefaultConcurrency,
		fresh:       make(chan struct{}),
		deferrals:   deferrals{kept: make(chan struct{}, 1)},
	}
	for _, o := range opts {
		o(r)
	}
	if r.recorder == nil {
		r.recorder = mgr.GetEventRecorder(r.Name())
	}
	if r.timeout <= 0 {
		return nil, fmt.Errorf("plugin %s: request timeout must be positive, got %s", def.Kind(), r.timeout)
	}
	r.client = WithTimeout(r.client, r.timeout)
	r.apiReader = readerWithTimeout{r.apiReader, r.timeout}
	cfg, err := def.DecodeHostDefaults(r.defaults)
	if err != nil {
		return nil, err
	}
	r.hostConfig = cfg
	if err := r.decodeStaged(); err != nil {
		return nil, fmt.Errorf("plugin %s: %w", def.Kind(), err)
	}
	if r.def, err = def.ForHost(cfg); err != nil {
		return nil, err
	}
	r.configured = slices.Clone(r.def.Owns[len(def.Owns):])
	if r.resync <= 0 {
		return nil, fmt.Errorf("plugin %s: resync period must be positive, got %s", def.Kind(), r.resync)
	}
	if r.status != nil {
		r.status.Expect(def.Condition(), func(p *kubeflowv1.Profile) bool {
			return r.shard.Matches(labels.Set(p.Labels)) && r.Applies(p)
		})
	}
	r.applierOptions = append(applierOptions(r.def), apply.WithLiveReader(r.apiReader), apply.WithScheme(r.scheme),
		apply.WithMetadataOnly(metadataOnly(r.def, r.whole...)...), apply.WithShardLabels(r.shard), apply.WithRepairGate(r.repairs))
	return r, nil
}

// Name is the controller's name, also its Events' reporting controller.
func (r *Reconciler) Name() string { return plugins.FieldManagerFor(r.def.Kind()) }

// gone handles a failed read of the Profile: one that is gone is forgotten
// by the status writer and the deferrals, and is no error.
func (r *Reconciler) gone(profile string, err error) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	r.deferrals.end(profile)
	if r.status != nil {
		r.status.forget(profile)
	}
	return nil
}

// Reconcile applies, revokes or finalizes the plugin for one Profile.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.wakes.pass(req.Name)
	ctx = log.IntoContext(ctx, withoutBodies(log.FromContext(ctx)))
	defer r.firstPass.passed(req.Name)
	// The cache's Profile, not a copy (see own): most passes only read it.
	var p kubeflowv1.Profile
	if err := r.client.Get(ctx, req.NamespacedName, &p, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, r.gone(req.Name, err)
	}
	if !r.shard.Matches(labels.Set(p.Labels)) {
		return reconcile.Result{}, nil
	}
	if r.precedence != nil {
		end, later, err := r.takeTurn(ctx, req, &p)
		if end == nil {
			return later, err
		}
		defer end()
	}
	ctx = withPassPriority(ctx, int(p.CreationTimestamp.Unix()))
	s := r.settingsFor(&p)
	ctx = context.WithValue(ctx, settingsKey{}, s)
	switch {
	case !p.DeletionTimestamp.IsZero():
		return r.finalize(ctx, &p)
	case !s.applies(r.def.Kind(), &p):
		// Revocation is never paused: what the Profile no longer has goes.
		return r.revoke(ctx, &p)
	case plugins.Paused(&p, r.def.Kind()):
		return r.pause(ctx, &p)
	default:
		return r.apply(ctx, &p)
	}
}

// own gives the pass a Profile of its own to write: a pass reads the
// cache's Profile, whose maps and slices the cache and every other pass
// share, until it changes it (a finalizer, a condition written without a
// StatusWriter, a write whose answer is decoded into it). Plugins never
// change the Profile (plugins.Request.Profile).
func own(p *kubeflowv1.Profile) { *p = *p.DeepCopy() }

// Applies reports whether the plugin applies to p: p lists it, or the host
// enables it for all Profiles that match its selector.
func (r *Reconciler) Applies(p *kubeflowv1.Profile) bool {
	return r.settingsFor(p).applies(r.def.Kind(), p)
}

// request returns the request of one pass, and the outside-state record
// that the pass writes when it ends; writes tells of the writes of its
// Applier.
func (r *Reconciler) request(ctx context.Context, p *kubeflowv1.Profile, cfg any, writes *passWrites) (plugins.Request, *outside.Outside) {
	retention := r.settingsIn(ctx, p).Retention
	if retention == "" {
		retention = plugins.RetentionRetain
	}
	record := outside.New(r.client, r.def.Kind(), p, r.outside,
		outside.WithLiveReader(r.apiReader), outside.WithRecords(r.records))
	return plugins.Request{
		Profile:   p,
		Config:    cfg,
		Client:    r.client,
		Objects:   apply.New(r.client, r.def.Kind(), p, r.def.Owns, append(slices.Clip(r.applierOptions), apply.WithWriteObserver(writes))...),
		Outside:   record,
		Retention: retention,
		Watched:   r.watched,
		Live:      r.apiReader,
	}, record
}

// tenures returns the tenure records the plugin holds names in, or nil
// for a plugin without outside state.
func (r *Reconciler) tenures() *outside.Tenures {
	return tenures(r.def, r.client, r.apiReader, r.outside)
}

func (r *Reconciler) apply(ctx context.Context, p *kubeflowv1.Profile) (reconcile.Result, error) {
	if ready, err := r.namespaceReady(ctx, p); !ready || err != nil {
		return reconcile.Result{}, err
	}
	cfg, err := r.decode(r.settingsIn(ctx, p), p)
	if err != nil {
		return r.failed(ctx, p, err, plugins.ReasonInvalidSpec)
	}
	if err := holdTenure(ctx, r.tenures(), p); err != nil {
		return r.failed(ctx, p, err, plugins.ReasonConflict)
	}
	if fin := r.def.Finalizer(); fin != "" && !controllerutil.ContainsFinalizer(p, fin) {
		if err := r.patchFinalizer(ctx, p, fin, true); err != nil {
			return reconcile.Result{}, err
		}
	}
	start := time.Now()
	writes := r.own.pass()
	req, record := r.request(ctx, p, cfg, writes)
	res, err := r.def.Plugin.Apply(ctx, req)
	err = errors.Join(err, record.Flush(ctx))
	r.recent.record(writes.sent.Load())
	passSeconds.WithLabelValues(r.def.Kind(), "apply").Observe(time.Since(start).Seconds())
	observeResult(r.def.Kind(), res)
	if err != nil {
		return r.failed(ctx, p, err, plugins.ReasonApplyFailed)
	}
	if res.Waiting != "" {
		return r.wait(ctx, p, res, "")
	}
	inSync := len(res.Changes) - res.Count(plugins.Deleted)
	msg := appliedMessage(inSync)
	if _, err := r.setCondition(ctx, p, &kubeflowv1.ProfileCondition{Type: r.def.Condition(), Status: plugins.ConditionTrue, Message: msg, ObservedGeneration: p.Generation}); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.handOver(ctx, p); err != nil {
		return reconcile.Result{}, err
	}
	if writes.missed {
		// Someone changed an object while this pass wrote it, and its
		// event was held back with the write's own (see ownWrites).
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	}
	return reconcile.Result{}, nil
}

// namespaceReady reports whether the plugin may write into the Profile's
// namespace: always without a namespace gate, else once the core plugin's
// namespace for the Profile is in the cache and not being deleted.
func (r *Reconciler) namespaceReady(ctx context.Context, p *kubeflowv1.Profile) (bool, error) {
	if r.namespaceGate == nil || r.def.Upstream || !r.namespaceGate(p) {
		return true, nil
	}
	ns := apply.NewMetadata(namespaceGVK)
	err := r.client.Get(ctx, types.NamespacedName{Name: plugins.Namespace(p)}, ns)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read namespace %s: %w", plugins.Namespace(p), err)
	}
	return plugins.IsOwnedBy(ns.Labels, plugins.CoreKind, p.Name) && ns.DeletionTimestamp.IsZero(), nil
}

// failed reports err in the plugin's condition. A terminal error is logged and
// waits for the next change or resync; any other error is returned so that the
// controller retries it with backoff. The Warning Event is recorded when the
// condition changes, so that a Profile that stays broken does not fill the
// event log.
func (r *Reconciler) failed(ctx context.Context, p *kubeflowv1.Profile, err error, fallback string) (reconcile.Result, error) {
	reason := plugins.ReasonOf(err, fallback)
	failuresTotal.WithLabelValues(r.def.Kind(), reason).Inc()
	// A spec with thousands of problems must not make a condition or an
	// Event larger than the API server takes: both are bounded.
	cond := &kubeflowv1.ProfileCondition{Type: r.def.Condition(), Status: plugins.ConditionFalse, Message: plugins.FailureMessage(err, fallback), ObservedGeneration: p.Generation}
	changed, serr := r.setCondition(ctx, p, cond)
	if changed {
		r.recorder.Eventf(p, nil, corev1.EventTypeWarning, reason, "Apply", "%s: %s", r.def.Kind(), plugins.BoundMessage(err.Error()))
	}
	if serr != nil {
		return reconcile.Result{}, errors.Join(err, serr)
	}
	if after, ok := retryAfter(err); ok {
		// Left alone for a while (an object another controller writes
		// too): passed again then, not retried with backoff.
		return reconcile.Result{RequeueAfter: after}, nil
	}
	if !plugins.IsTerminal(err) {
		return reconcile.Result{}, err
	}
	// Not retried until the Profile changes or the next resync;
	// controller-runtime logs and counts it.
	return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("plugin %s: input cannot succeed until it changes (%s): %w", r.def.Kind(), reason, err))
}
