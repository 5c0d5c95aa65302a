package budgets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// LabelBudget names the budget a ResourceQuota carries the share of.
const LabelBudget = "profilekit.dev/budget"

// askTTL is how long a workload's refusal (a FailedCreate Event) counts as
// an ask for more.
const askTTL = 30 * time.Second

// balancer moves headroom between the members of every budget. It is the
// only writer of budget quotas' shares; it reads its inputs from watches
// (Profiles, its quotas, FailedCreate Events) and every decision to raise a
// share from a fresh list of the quotas.
type balancer struct {
	budgets []Budget
	opts    options
	c       client.Client
	cache   cache.Cache
	enqueue func(...string)
	view    *view
	wake    chan struct{}
	// debug, when set, is told of every plan that leaves a member starved.
	debug func(budget string, res corev1.ResourceName, p plan, seats []seat)

	mu sync.Mutex
	// changed is when each quota's status.used last changed, by namespace
	// and name; a quota first seen counts as changed then.
	changed map[string]time.Time
	// asks are the refusals seen, by namespace and budget.
	asks map[string]ask
	// raised is when each member last got more, by namespace and budget.
	raised map[string]time.Time
	// reported is what Apply last had to report for each member, to
	// enqueue only the Profiles whose report changes.
	reported map[string]string
	// seen is each member's quota as the last pass read it, by namespace,
	// budget and resource, to tell an over-admission (use grew past a
	// share the API server enforced) from a share cut or a new quota.
	seen map[string]seenSeat
	// admitted counts the over-admissions seen, by namespace and budget.
	admitted map[string]int
}

// seenSeat is one resource of a member's quota in the last pass.
type seenSeat struct {
	uid            string
	used, enforced int64
}

// ask is a refusal by a budget's quota: when it was seen and for which
// resources.
type ask struct {
	at        time.Time
	resources []corev1.ResourceName
}

// profileGVK is the Profile kind, watched as metadata only.
var profileGVK = kubeflowv1.GroupVersion.WithKind("Profile")

// run is the Definition's Runner: it balances the host's budgets until ctx
// ends.
func (p Plugin) run(ctx context.Context, rt plugins.Runtime) error {
	cfg, ok := rt.Config.(*Config)
	if !ok || cfg == nil {
		return fmt.Errorf("config is %T, want *budgets.Config", rt.Config)
	}
	if len(cfg.Budgets) == 0 {
		<-ctx.Done()
		return nil
	}
	b, err := p.newBalancer(ctx, rt, cfg)
	if err != nil {
		return err
	}
	if logger := log.FromContext(ctx); logger.V(2).Enabled() {
		b.debug = func(budget string, res corev1.ResourceName, p plan, seats []seat) {
			logger.V(2).Info("starved", "budget", budget, "resource", res, "held", p.Held, "over", p.Over, "starved", p.Starved, "seats", fmt.Sprintf("%+v", seats))
		}
	}
	return b.loop(ctx)
}

func (p Plugin) newBalancer(ctx context.Context, rt plugins.Runtime, cfg *Config) (*balancer, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), kubeflowv1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	c, err := client.New(rt.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	profiles := &metav1.PartialObjectMetadata{}
	profiles.SetGroupVersionKind(profileGVK)
	ca, err := cache.New(rt.RESTConfig, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.ResourceQuota{}: {Label: quotaSelector()},
		&corev1.Event{}:         {Field: fields.OneTermEqualSelector("reason", "FailedCreate")},
		profiles:                {},
	}})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	enqueue := rt.Enqueue
	if enqueue == nil {
		enqueue = func(...string) {}
	}
	b := &balancer{
		budgets: cfg.Budgets, opts: p.st.opts, c: c, cache: ca, enqueue: enqueue, view: p.st.view,
		wake:    make(chan struct{}, 1),
		changed: map[string]time.Time{}, asks: map[string]ask{}, raised: map[string]time.Time{}, reported: map[string]string{},
		seen: map[string]seenSeat{}, admitted: map[string]int{},
	}
	for obj, h := range map[client.Object]toolscache.ResourceEventHandler{
		&corev1.ResourceQuota{}: toolscache.ResourceEventHandlerFuncs{AddFunc: b.quotaAdded, UpdateFunc: b.quotaUpdated, DeleteFunc: func(any) { b.poke() }},
		&corev1.Event{}:         toolscache.ResourceEventHandlerFuncs{AddFunc: b.eventSeen, UpdateFunc: func(_, e any) { b.eventSeen(e) }},
		profiles:                toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { b.poke() }, UpdateFunc: func(_, _ any) { b.poke() }, DeleteFunc: func(any) { b.poke() }},
	} {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// quotaSelector selects every budget quota.
func quotaSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: Kind})
}

// loop runs a pass at every change it watches and at every tick, which
// finds quotas that have become quiet, until ctx ends.
func (b *balancer) loop(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("plugin", Kind)
	ctx = log.IntoContext(ctx, logger)
	cacheCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- b.cache.Start(cacheCtx) }()
	if !b.cache.WaitForCacheSync(ctx) {
		stop()
		return errors.Join(ctx.Err(), <-done)
	}
	tick := time.NewTicker(b.opts.tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stop()
			<-done
			return nil
		case <-b.wake:
		case <-tick.C:
		}
		if err := b.pass(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "budget pass")
		}
		// Changes come in bursts (every admitted pod changes a quota);
		// one pass takes them all.
		select {
		case <-ctx.Done():
		case <-time.After(b.opts.gap):
		}
	}
}

func (b *balancer) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func quotaKey(q *corev1.ResourceQuota) string { return q.Namespace + "/" + q.Name }

func (b *balancer) quotaAdded(obj any) {
	if q, ok := obj.(*corev1.ResourceQuota); ok {
		b.mu.Lock()
		b.changed[quotaKey(q)] = time.Now()
		b.mu.Unlock()
	}
	b.poke()
}

func (b *balancer) quotaUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*corev1.ResourceQuota)
	n, ok2 := newObj.(*corev1.ResourceQuota)
	if ok1 && ok2 && !equalLists(o.Status.Used, n.Status.Used) {
		b.mu.Lock()
		b.changed[quotaKey(n)] = time.Now()
		b.mu.Unlock()
	}
	b.poke()
}

// eventSeen records a workload's refusal by a budget quota as an ask. The
// Event is in the member's namespace, where its tenant can forge one: at
// worst that asks for headroom the budget has, never for more.
func (b *balancer) eventSeen(obj any) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return
	}
	name, resources, ok := parseRefusal(e.Message)
	budget, isBudget := strings.CutPrefix(name, QuotaPrefix)
	if !ok || !isBudget || time.Since(eventTime(e)) > askTTL {
		return
	}
	b.mu.Lock()
	b.asks[e.Namespace+"/"+budget] = ask{at: time.Now(), resources: resources}
	b.mu.Unlock()
	b.poke()
}

// eventTime is when the Event last happened.
func eventTime(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// parseRefusal reads the quota admission's refusal, as workload
// controllers repeat it in FailedCreate Events: "... exceeded quota: <name>,
// requested: requests.cpu=1,limits.cpu=2, used: ..., limited: ...". It
// returns the quota's name and the resources that did not fit.
func parseRefusal(msg string) (string, []corev1.ResourceName, bool) {
	_, rest, ok := strings.Cut(msg, "exceeded quota: ")
	if !ok {
		return "", nil, false
	}
	name, rest, ok := strings.Cut(rest, ", requested: ")
	if !ok {
		return "", nil, false
	}
	requested, _, _ := strings.Cut(rest, ", used: ")
	var out []corev1.ResourceName
	for _, kv := range strings.Split(requested, ",") {
		if k, _, ok := strings.Cut(kv, "="); ok {
			out = append(out, corev1.ResourceName(strings.TrimSpace(k)))
		}
	}
	return name, out, true
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
