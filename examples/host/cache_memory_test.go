package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/bench"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/reconcilers"
)

var cacheMemProfiles = flag.Int("cachemem.n", 500, "BenchmarkCacheMemory: Profiles whose objects are written, each in a namespace of its own")

// BenchmarkCacheMemory measures the live heap the host's cache takes per
// object, kind by kind, under reconcilers.CacheOptions (our objects only,
// our managed-fields entry only, repeated strings and values held once), in
// the form the host caches each kind: metadata only unless a plugin reads
// it whole.
//
// On a control plane of its own with the CRDs of config/istio.yaml, it
// creates -cachemem.n of the host benchmark's Profiles (every plugin serves
// them: 23 objects each), renders their objects as `profilekit render`
// does, and server-side applies each with its plugin's field manager, as the
// host writes them. Then, for each kind written, it starts a cache with one
// informer, in the form the host reads the kind, and reports
// the heap it added, after garbage collection, per object it holds. The
// figure includes a cache's fixed cost, measured on a kind with none of our
// objects; each kind's log line gives its share.
//
// The measurement runs once per kind, whatever b.N:
//
//	go test ./examples/host/ -run '^$' -bench CacheMemory -benchtime 1x
//
// loadHostConfig loads the host configuration at path with the built-in
// plugins, as run does.
func loadHostConfig(tb testing.TB, path string) (*hostconfig.Config, *plugins.Registry) {
	tb.Helper()
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := hostconfig.Load(path, reg)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, reg
}

func BenchmarkCacheMemory(b *testing.B) {
	// Nothing reads the caches' logs; without a logger controller-runtime
	// prints a warning once the process is 30 s old.
	log.SetLogger(logr.Discard())
	ctx := b.Context()
	cfg, reg := loadHostConfig(b, hostConfig)
	assets, err := testenv.AssetsDir()
	if err != nil {
		b.Fatal(err)
	}
	cp, err := local.StartControlPlane(ctx, local.Options{
		Config: cfg, Registry: reg,
		RepoRoot: testenv.RepoRoot(), AssetsDir: assets, Out: io.Discard,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Env.Stop() })
	scheme, err := server.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	// Client-side limits far above what the API server takes, so that the
	// server sets the pace of the writes.
	writer, err := client.New(reconcilers.RateLimited(cp.Env.Config, 1000, 2000), client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	written := writeProfiles(b, writer, render.New(cp.Config, reg, scheme), *cacheMemProfiles)
	kinds := slices.SortedFunc(func(yield func(schema.GroupVersionKind) bool) {
		for gvk := range written {
			if !yield(gvk) {
				return
			}
		}
	}, func(x, y schema.GroupVersionKind) int { return cmp.Compare(x.String(), y.String()) })

	// One HTTP client and one warmed REST mapper for every cache, as a
	// manager shares its own between its caches, so that neither the
	// transport nor API discovery counts against the first kind measured.
	httpClient, err := rest.HTTPClientFor(cp.Env.Config)
	if err != nil {
		b.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cp.Env.Config, httpClient)
	if err != nil {
		b.Fatal(err)
	}
	configMaps := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for _, gvk := range append(kinds, configMaps) {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			b.Fatal(err)
		}
	}
	options := func() cache.Options {
		opts := reconcilers.CacheOptions(nil)
		opts.Scheme, opts.Mapper, opts.HTTPClient = scheme, mapper, httpClient
		return opts
	}
	// No ConfigMap carries our label: what a cache of them takes is the
	// fixed cost of a cache with one informer.
	empty := readCache(b, cp.Env.Config, options(), configMaps, false)
	if empty.objects != 0 {
		b.Fatalf("the ConfigMap cache holds %d objects, want none", empty.objects)
	}

	rows := make([]string, 0, len(kinds))
	for _, gvk := range kinds {
		b.Run(gvk.Kind, func(b *testing.B) {
			var got cacheReading
			for i := 0; b.Loop(); i++ {
				if i == 0 {
					got = readCache(b, cp.Env.Config, options(), gvk, metadataOnly(gvk))
				}
			}
			if got.objects != written[gvk] {
				b.Fatalf("the cache holds %d %ss, want the %d written", got.objects, gvk.Kind, written[gvk])
			}
			perObject := float64(got.heap) / float64(got.objects)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(perObject, "B/object")
			b.ReportMetric(float64(got.objects), "objects")
			form := "whole"
			if metadataOnly(gvk) {
				form = "metadata"
			}
			b.Logf("%s: %d objects of %d JSON bytes as cached (%s); the cache's fixed cost is %.0f of the %.0f B/object",
				gvk.Kind, got.objects, got.jsonBytes, form, float64(empty.heap)/float64(got.objects), perObject)
			rows = append(rows, fmt.Sprintf("%-20s %-8s %7d %9.0f %11d", gvk.Kind, form, got.objects, perObject, got.jsonBytes))
		})
	}
	b.Logf("heap per cached object, by kind:\n%-20s %-8s %7s %9s %11s\n%s", "KIND", "CACHED", "OBJECTS", "B/OBJECT", "JSON BYTES", strings.Join(rows, "\n"))
}

// metadataOnly reports whether the host caches gvk as metadata only: no
// plugin that owns it reads it whole.
func metadataOnly(gvk schema.GroupVersionKind) bool {
	return !slices.Contains(reconcilers.WholeKinds(builtin.Definitions()...), gvk)
}

// writeProfiles creates n of the host benchmark's Profiles (so that owner
// references carry their uids), renders what the plugins make for them and
// applies each object with its plugin's field manager. It returns how many
// objects of each kind it applied.
func writeProfiles(b *testing.B, c client.Client, r *render.Renderer, n int) map[schema.GroupVersionKind]int {
	b.Helper()
	ctx := b.Context()
	profiles := make([]*kubeflowv1.Profile, n)
	for i := range profiles {
		profiles[i] = bench.Profile("cachemem", i+1)
		if err := c.Create(ctx, profiles[i]); err != nil {
			b.Fatal(err)
		}
	}
	out, err := r.Render(ctx, profiles)
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu      sync.Mutex
		written = map[schema.GroupVersionKind]int{}
		errs    []error
	)
	apply := func(objects []render.Object) {
		var wg sync.WaitGroup
		slots := make(chan struct{}, 8)
		for _, o := range objects {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				u := o.Object
				err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(plugins.FieldManagerFor(o.Plugin)), client.ForceOwnership)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err))
					return
				}
				written[u.GroupVersionKind()]++
			})
		}
		wg.Wait()
	}
	// The namespaces (core's) first: the other objects go into them.
	namespaced := slices.DeleteFunc(slices.Clone(out.Objects), func(o render.Object) bool { return o.Object.GetNamespace() == "" })
	apply(slices.DeleteFunc(slices.Clone(out.Objects), func(o render.Object) bool { return o.Object.GetNamespace() != "" }))
	apply(namespaced)
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return written
}

// cacheReading is what one cache of one kind took.
type cacheReading struct {
	// heap is the live heap the cache added, in bytes.
	heap int64
	// objects is how many objects the cache holds, and jsonBytes the
	// average size of one of them, as cached, encoded as JSON.
	objects, jsonBytes int
}

// readCache starts a cache with opts and one informer, for gvk, and reads
// the live heap before it starts and once it has synced. The cache is
// stopped before it returns.
func readCache(b testing.TB, cfg *rest.Config, opts cache.Options, gvk schema.GroupVersionKind, metadataOnly bool) cacheReading {
	b.Helper()
	// The host's controllers watch an owned kind through this object:
	// metadata only unless a plugin reads it whole, then typed when the
	// scheme knows the kind, unstructured otherwise.
	obj, err := apply.NewObject(opts.Scheme, gvk)
	if err != nil {
		b.Fatal(err)
	}
	list, err := apply.NewList(opts.Scheme, gvk)
	if err != nil {
		b.Fatal(err)
	}
	if metadataOnly {
		obj, list = apply.NewMetadata(gvk), apply.NewMetadataList(gvk)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()

	before := liveHeap()
	c, err := cache.New(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, obj); err != nil {
		b.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatalf("the %s cache did not sync", gvk.Kind)
	}
	after := liveHeap()
	runtime.KeepAlive(c)

	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		b.Fatal(err)
	}
	n, size := 0, 0
	err = meta.EachListItem(list, func(o k8sruntime.Object) error {
		data, err := json.Marshal(o)
		n, size = n+1, size+len(data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	cancel()
	if err := <-stopped; err != nil {
		b.Fatalf("the %s cache stopped: %v", gvk.Kind, err)
	}
	return cacheReading{heap: int64(after) - int64(before), objects: n, jsonBytes: size / max(n, 1)}
}

// liveHeap returns the bytes of live heap objects, after the garbage that
// earlier work left has been collected. The second collection frees what
// the first one's finalizers released.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
