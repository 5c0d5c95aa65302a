package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// changedMemory is the quota defaults' limits.memory in the host-wide change.
const changedMemory = "40Gi"

// hostWideChange restarts the host with one host-wide input changed, as a
// configuration rollout does: the quota defaults' limits.memory. It times
// until every Profile's ResourceQuota carries the new value and counts the
// new host's requests until it is idle: one apply per ResourceQuota and
// nothing else is the target. Without the quotas plugin it does nothing.
func (b *bench) hostWideChange(ctx context.Context) error {
	sec, ok := b.cfg.Section(quotas.Kind)
	if !ok {
		return nil
	}
	fmt.Fprintf(b.Out, "\n== host-wide change: restart with the quota defaults' limits.memory at %s\n", changedMemory)
	var defaults map[string]any
	if err := json.Unmarshal(sec.Defaults, &defaults); err != nil {
		return fmt.Errorf("quota defaults: %w", err)
	}
	hard, _ := defaults["hard"].(map[string]any)
	if hard == nil {
		hard = map[string]any{}
		defaults["hard"] = hard
	}
	hard["limits.memory"] = changedMemory
	raw, err := json.Marshal(defaults)
	if err != nil {
		return err
	}
	sec.Defaults = raw
	cfg := *b.cfg
	cfg.Plugins = maps.Clone(cfg.Plugins)
	cfg.Plugins[quotas.Kind] = sec

	start := time.Now()
	h, err := b.startHostWith(ctx, &cfg)
	if err != nil {
		return err
	}
	defer b.stop(h)
	deadline := start.Add(b.Timeout)
	for {
		n, err := b.quotasWith(ctx, changedMemory)
		if err != nil {
			return err
		}
		if n >= b.Profiles {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host-wide change: %d of %d ResourceQuotas changed within %s", n, b.Profiles, b.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	el := time.Since(start)
	if err := waitIdle(ctx, b.Timeout); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	req := h.counter.snapshot()
	b.res.HostChange = &HostChange{
		Seconds:          el.Seconds(),
		Changed:          b.Profiles,
		MutatingRequests: req.mutating(),
		Requests:         sortedCounts(req),
	}
	fmt.Fprintf(b.Out, "%d ResourceQuotas changed in %s; %d requests, %d mutating\n", b.Profiles, el.Round(time.Millisecond), req.total(), req.mutating())
	return nil
}

// quotasWith counts the quotas plugin's ResourceQuotas whose limits.memory
// is value.
func (b *bench) quotasWith(ctx context.Context, value string) (int, error) {
	var list corev1.ResourceQuotaList
	err := b.driver.List(ctx, &list, client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: quotas.Kind})
	if err != nil {
		return 0, fmt.Errorf("list ResourceQuotas: %w", err)
	}
	n := 0
	for _, q := range list.Items {
		if v, ok := q.Spec.Hard[corev1.ResourceLimitsMemory]; ok && v.String() == value {
			n++
		}
	}
	return n, nil
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
