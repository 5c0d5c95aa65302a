package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// steadyState restarts the host, which makes every controller reconcile
// every Profile once from its fresh cache, with nothing changed, and counts
// the mutating requests that sends. It returns the restarted host.
func (b *bench) steadyState(ctx context.Context) (*host, error) {
	fmt.Fprintf(b.Out, "\n== steady state: restart the host; every controller reconciles every Profile with nothing changed\n")
	before, err := controllerCounters()
	if err != nil {
		return nil, err
	}
	srvBefore, err := serverCounts(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	peak := watchHeap()
	start := time.Now()
	h, err := b.startHost(ctx)
	if err != nil {
		peak()
		return nil, err
	}
	want := map[string]bool{}
	for _, def := range b.defs {
		want[plugins.FieldManagerFor(def.Kind())] = true
	}
	deadline := time.Now().Add(b.Timeout)
	for {
		now, err := controllerCounters()
		if err != nil {
			return h, err
		}
		short := 0
		for c := range want {
			if now[c]-before[c] < b.Profiles+b.extraProfiles {
				short++
			}
		}
		if short == 0 {
			break
		}
		if time.Now().After(deadline) {
			return h, fmt.Errorf("steady state: %d controllers reconciled fewer than %d Profiles within %s", short, b.Profiles+b.extraProfiles, b.Timeout)
		}
		select {
		case <-ctx.Done():
			return h, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	el := time.Since(start)
	peakHeap := peak()
	if err := waitIdle(ctx, b.Timeout); err != nil {
		return h, err
	}
	time.Sleep(2 * time.Second)
	after, err := controllerCounters()
	if err != nil {
		return h, err
	}
	reconciles := 0
	for c := range want {
		reconciles += after[c] - before[c]
	}
	srvAfter, err := serverCounts(ctx, b.cs)
	if err != nil {
		return h, err
	}
	req := h.counter.snapshot()
	srv := srvAfter.minus(srvBefore).only(map[string]bool{"profiles": true, "events": true}).minus(b.drv.snapshot())
	b.res.Steady = Steady{
		Seconds:            el.Seconds(),
		Reconciles:         reconciles,
		MutatingRequests:   req.mutating(),
		Requests:           sortedCounts(req),
		ServerMutatingHost: srv.mutating(),
		PeakHeapMiB:        mib(peakHeap),
	}
	fmt.Fprintf(b.Out, "restart and full pass in %s: %d reconciles, %d requests, %d mutating, peak heap %.1f MiB\n", el.Round(time.Millisecond), reconciles, req.total(), req.mutating(), mib(peakHeap))
	return h, nil
}

// drift deletes or edits by hand randomly chosen owned objects (half each)
// and times, through watches, how long each takes to come back. An edit
// rewrites the applied-hash annotation, a field the plugin owns.
func (b *bench) drift(ctx context.Context, d *desired) error {
	k := min(b.Drift, len(d.objects))
	if k <= 0 {
		return nil
	}
	fmt.Fprintf(b.Out, "\n== drift: delete or hand-edit %d owned objects and time their repair\n", k)
	rng := rand.New(rand.NewPCG(b.Seed, b.Seed^0x9e3779b97f4a7c15))
	// A namespace deleted here would never finish deleting (no namespace
	// controller runs), and would take everything in it along: pick the
	// objects inside namespaces only.
	var candidates []int
	for _, i := range rng.Perm(len(d.objects)) {
		if d.objects[i].Object.GetNamespace() != "" {
			candidates = append(candidates, i)
		}
	}
	k = min(k, len(candidates))
	picks := candidates[:k]
	type victim struct {
		key    objectKey
		delete bool
		uid    types.UID
		hash   string
		start  time.Time
		took   time.Duration
	}
	victims := make([]*victim, k)
	byKey := map[objectKey]*victim{}
	var kinds []schema.GroupVersionKind
	for i, p := range picks {
		v := &victim{key: keyOf(d.objects[p].Object), delete: i%2 == 0}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v.key.GVK)
		if err := b.driver.Get(ctx, client.ObjectKey{Namespace: v.key.Namespace, Name: v.key.Name}, u); err != nil {
			return fmt.Errorf("drift: get %s %s/%s: %w", v.key.GVK.Kind, v.key.Namespace, v.key.Name, err)
		}
		v.uid, v.hash = u.GetUID(), u.GetAnnotations()[plugins.AnnotationAppliedHash]
		victims[i] = v
		byKey[v.key] = v
		if !slices.Contains(kinds, v.key.GVK) {
			kinds = append(kinds, v.key.GVK)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	var mu sync.Mutex
	left := k
	allBack := make(chan struct{})
	var wg sync.WaitGroup
	for _, gvk := range kinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := b.driver.List(ctx, l, managedSelector(), client.Limit(1)); err != nil {
			return fmt.Errorf("drift: list %s: %w", gvk.Kind, err)
		}
		wi, err := b.driver.Watch(ctx, l, managedSelector(), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})
		if err != nil {
			return fmt.Errorf("drift: watch %s: %w", gvk.Kind, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					u, isU := ev.Object.(*unstructured.Unstructured)
					if !isU || (ev.Type != watch.Added && ev.Type != watch.Modified) {
						continue
					}
					now := time.Now()
					mu.Lock()
					v := byKey[keyOf(u)]
					if v != nil && !v.start.IsZero() && v.took == 0 {
						back := (v.delete && u.GetUID() != v.uid) ||
							(!v.delete && u.GetAnnotations()[plugins.AnnotationAppliedHash] == v.hash)
						if back {
							v.took = now.Sub(v.start)
							left--
							if left == 0 {
								close(allBack)
							}
						}
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, v := range victims {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v.key.GVK)
		u.SetNamespace(v.key.Namespace)
		u.SetName(v.key.Name)
		mu.Lock()
		v.start = time.Now()
		mu.Unlock()
		var err error
		if v.delete {
			err = b.driver.Delete(ctx, u, client.Preconditions{UID: &v.uid})
		} else {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"edited-by-hand"}}}`, plugins.AnnotationAppliedHash)
			err = b.driver.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)))
		}
		if err != nil {
			return fmt.Errorf("drift: change %s %s/%s: %w", v.key.GVK.Kind, v.key.Namespace, v.key.Name, err)
		}
	}
	select {
	case <-allBack:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	var all, del, edit []time.Duration
	for _, v := range victims {
		if v.took == 0 {
			continue
		}
		all = append(all, v.took)
		if v.delete {
			del = append(del, v.took)
		} else {
			edit = append(edit, v.took)
		}
	}
	b.res.Drift = Drift{
		Changed: k, Repaired: len(all),
		All: quantiles(all), Deleted: quantiles(del), Edited: quantiles(edit),
	}
	fmt.Fprintf(b.Out, "%d of %d repaired: p50 %s, p99 %s, max %s\n", len(all), k,
		secs(b.res.Drift.All.P50), secs(b.res.Drift.All.P99), secs(b.res.Drift.All.Max))
	return nil
}

// Quantiles summarise durations, in seconds.
type Quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Seconds"`
	P99 float64 `json:"p99Seconds"`
	Max float64 `json:"maxSeconds"`
}

func quantiles(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[max(0, min(i, len(ds)-1))].Seconds()
	}
	return Quantiles{N: len(ds), P50: at(0.50), P99: at(0.99), Max: ds[len(ds)-1].Seconds()}
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
