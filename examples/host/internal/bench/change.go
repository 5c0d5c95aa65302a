package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// The quota defaults' limits.memory in the host-wide change, and in the
// second rollout, which the rollout latency probe runs beside.
const (
	changedMemory = "40Gi"
	probedMemory  = "48Gi"
)

// hostWideChange restarts the host with one host-wide input changed, as a
// configuration rollout does: the quota defaults' limits.memory. It times,
// through a watch, until every benchmark Profile's ResourceQuota carries
// the new value, from the new host's start and from its cache sync, and
// counts the new host's requests until it is idle: one apply per
// ResourceQuota and nothing else is the target. In the run that measures
// latency it then rolls out a second change, from whose cache sync on it
// creates new Profiles one at a time: the rate is measured without them,
// their latency during a rollout like the first. It returns the last host,
// running; without the quotas plugin it only restarts the host.
func (b *bench) hostWideChange(ctx context.Context) (*host, error) {
	if _, ok := b.cfg.Section(quotas.Kind); !ok {
		return b.startHost(ctx)
	}
	h, c, err := b.rollout(ctx, changedMemory, false)
	if err != nil {
		return nil, err
	}
	b.res.HostChange = c
	if b.res.Latency == nil {
		return h, nil
	}
	b.stop(h)
	h, probed, err := b.rollout(ctx, probedMemory, true)
	if err != nil {
		return nil, err
	}
	c.ProbedObjectsPerSecond = probed.ObjectsPerSecond
	return h, nil
}

// rollout restarts the host with the quota defaults' limits.memory at value
// and measures the change as hostWideChange says; with probe, it also times
// new Profiles created from the cache sync on.
func (b *bench) rollout(ctx context.Context, value string, probe bool) (*host, *HostChange, error) {
	sec, _ := b.cfg.Section(quotas.Kind)
	fmt.Fprintf(b.Out, "\n== host-wide change: restart with the quota defaults' limits.memory at %s\n", value)
	var defaults map[string]any
	if err := json.Unmarshal(sec.Defaults, &defaults); err != nil {
		return nil, nil, fmt.Errorf("quota defaults: %w", err)
	}
	hard, _ := defaults["hard"].(map[string]any)
	if hard == nil {
		hard = map[string]any{}
		defaults["hard"] = hard
	}
	hard["limits.memory"] = value
	raw, err := json.Marshal(defaults)
	if err != nil {
		return nil, nil, err
	}
	sec.Defaults = raw
	cfg := *b.cfg
	cfg.Plugins = maps.Clone(cfg.Plugins)
	cfg.Plugins[quotas.Kind] = sec

	// The waits end with wctx; the host, which the caller keeps, runs on
	// ctx.
	wctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	lastChanged, err := b.watchQuotas(wctx, value)
	if err != nil {
		return nil, nil, err
	}
	before, err := controllerCounters()
	if err != nil {
		return nil, nil, err
	}
	stopProfile := func() {}
	if b.RolloutCPUProfile != "" && !probe {
		if stopProfile, err = startProfile(b.RolloutCPUProfile); err != nil {
			return nil, nil, err
		}
	}
	defer stopProfile()
	start := time.Now()
	h, err := b.startHostWith(ctx, &cfg)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*host, *HostChange, error) {
		b.stop(h)
		return nil, nil, err
	}
	synced, err := b.waitStarted(wctx, before)
	if err != nil {
		return fail(err)
	}
	var latency func() (*Latency, error)
	if probe {
		latency = b.probeFrom(wctx, synced, "rollout", rolloutProbes)
	}
	var span changeSpan
	select {
	case span = <-lastChanged:
		stopProfile()
	case <-wctx.Done():
		return fail(fmt.Errorf("host-wide change: not every ResourceQuota changed within %s: %w", b.Timeout, wctx.Err()))
	}
	if latency != nil {
		l, err := latency()
		if err != nil {
			return fail(fmt.Errorf("rollout latency probe: %w", err))
		}
		b.res.Latency.Rollout = l
		b.printLatency("new Profiles during the rollout", l)
	}
	if err := waitIdle(wctx, b.Timeout); err != nil {
		return fail(err)
	}
	time.Sleep(2 * time.Second)
	req := h.counter.snapshot()
	end := span.last
	c := &HostChange{
		Seconds:          end.Sub(start).Seconds(),
		SecondsFromSync:  end.Sub(synced).Seconds(),
		CacheSyncSeconds: synced.Sub(start).Seconds(),
		Changed:          b.Profiles,
		MutatingRequests: req.mutating(),
		Requests:         sortedCounts(req),
	}
	if c.SecondsFromSync > 0 {
		c.ObjectsPerSecond = float64(c.Changed) / c.SecondsFromSync
	}
	if d := span.last.Sub(span.first).Seconds(); d > 0 && c.Changed > 1 {
		c.SecondsFromFirst = d
		c.ObjectsPerSecondFromFirst = float64(c.Changed-1) / d
	}
	fmt.Fprintf(b.Out, "%d ResourceQuotas changed in %s from the start, %s from the cache sync (%.0f objects/s); %d requests, %d mutating\n",
		b.Profiles, end.Sub(start).Round(time.Millisecond), end.Sub(synced).Round(time.Millisecond), c.ObjectsPerSecond, req.total(), req.mutating())
	return h, c, nil
}

// changeSpan is when the first and the last ResourceQuota of a host-wide
// change were seen changed.
type changeSpan struct{ first, last time.Time }

// waitStarted waits until every controller of the host has begun to
// reconcile, and returns when the last one did. A controller's workers start
// once the informers of its watches have synced, which happens after the
// manager's own cache sync (local.StartHost waits for that one): this is
// when the host has synced everything it needs.
func (b *bench) waitStarted(ctx context.Context, before map[string]int) (time.Time, error) {
	deadline := time.Now().Add(b.Timeout)
	for {
		fams, err := gatherRegistry()
		if err != nil {
			return time.Time{}, err
		}
		total, active := byController(fams, reconcileTotal, true), byController(fams, activeWorkers, false)
		started := true
		for _, def := range b.defs {
			name := plugins.FieldManagerFor(def.Kind())
			if total[name] <= before[name] && active[name] == 0 {
				started = false
			}
		}
		if started {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("host-wide change: the restarted host's controllers did not start within %s", b.Timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		// Each look gathers the whole metrics registry once, which costs
		// the host CPU while it syncs; 25 ms apart keeps that small.
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// watchQuotas follows the quotas plugin's ResourceQuotas of the benchmark's
// Profiles (not the probes') through a watch, and sends on the returned
// channel when the first and the last of them came to carry value as its
// limits.memory.
func (b *bench) watchQuotas(ctx context.Context, value string) (<-chan changeSpan, error) {
	sel := client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: quotas.Kind}
	changed := map[string]bool{}
	var first time.Time
	note := func(q *corev1.ResourceQuota) bool {
		if v, ok := q.Spec.Hard[corev1.ResourceLimitsMemory]; ok && v.String() == value && strings.HasPrefix(q.Namespace, "bench-") {
			changed[q.Namespace] = true
			if first.IsZero() {
				first = time.Now()
			}
		}
		return len(changed) >= b.Profiles
	}
	var list corev1.ResourceQuotaList
	if err := b.driver.List(ctx, &list, sel); err != nil {
		return nil, fmt.Errorf("list ResourceQuotas: %w", err)
	}
	for i := range list.Items {
		if note(&list.Items[i]) {
			return nil, fmt.Errorf("every ResourceQuota already has limits.memory %s", value)
		}
	}
	done := make(chan changeSpan, 1)
	go func() {
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			w, err := b.driver.Watch(ctx, &corev1.ResourceQuotaList{}, sel, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err == nil {
				for ev := range w.ResultChan() {
					if ev.Type == watch.Error {
						// Too old a version: start again from the current
						// state, which comes as ADDED events.
						rv = ""
						break
					}
					q, ok := ev.Object.(*corev1.ResourceQuota)
					if !ok {
						continue
					}
					rv = q.ResourceVersion
					if note(q) {
						done <- changeSpan{first: first, last: time.Now()}
						w.Stop()
						return
					}
				}
				w.Stop()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return done, nil
}

// watchHeap samples the process's heap in use every 50 ms until the
// returned function is called, which returns the highest reading.
func watchHeap() func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
		once sync.Once
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		once.Do(func() { close(stop); <-done })
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
