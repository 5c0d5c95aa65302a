package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/reconcilers"
)

// watchedFloor times the POST floor's plain client while a cache built
// with the host's options (reconcilers.CacheOptions: its selector on the
// floor's label, its transforms) watches every kind it writes, in the
// cheapest form the host caches an owned kind (metadata only), at the
// host's GOGC; the clock stops when the cache has seen every object. Its
// CPU over the POST floor's is what watching its own writes costs a
// controller before it decides anything: a bound under the host's.
func (b *bench) watchedFloor(ctx context.Context, d *desired) error {
	fmt.Fprintf(b.Out, "\n== watched floor: the POST floor's client, with a cache of the host's options watching the %d objects it writes\n", len(d.objects))
	defer withHostGC()()
	opts := reconcilers.CacheOptions(nil)
	opts.Scheme = b.scheme
	opts.DefaultLabelSelector = labels.SelectorFromSet(labels.Set{plugins.LabelManagedBy: floorManager})
	c, err := cache.New(b.admin, opts)
	if err != nil {
		return fmt.Errorf("watched floor: cache: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var seen atomic.Int64
	count := toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { seen.Add(1) }}
	for _, gvk := range d.kinds() {
		inf, err := c.GetInformer(ctx, apply.NewMetadata(gvk))
		if err != nil {
			return fmt.Errorf("watched floor: informer for %s: %w", gvk, err)
		}
		if _, err := inf.AddEventHandler(count); err != nil {
			return fmt.Errorf("watched floor: informer for %s: %w", gvk, err)
		}
	}
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("watched floor: cache did not sync: %w", ctx.Err())
	}
	settle := func(ctx context.Context, n int) error {
		for seen.Load() < int64(n) {
			select {
			case err := <-started:
				return fmt.Errorf("watched floor: cache stopped: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	}
	p, err := b.timeFloor(ctx, d, "watchedfloor", postWrite, settle)
	if err != nil {
		return fmt.Errorf("watched floor: %w", err)
	}
	b.res.WatchedFloor = &p
	return nil
}
