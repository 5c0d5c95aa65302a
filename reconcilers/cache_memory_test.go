package reconcilers_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/api/kubeflow"
	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/egress"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/notebook"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/rbac"
	"github.com/profilekit/profilekit/plugins/replicate"
	"github.com/profilekit/profilekit/plugins/volumes"
	"github.com/profilekit/profilekit/reconcilers"
)

var cacheMemProfiles = flag.Int("cachemem.n", 500, "BenchmarkCacheMemory: Profiles whose objects are written, each in a namespace of its own")

// cacheMemConfig is the host configuration whose plugins write the objects:
// the one with every plugin, Istio's included.
var cacheMemConfig = filepath.Join(testenv.RepoRoot(), "examples", "host", "config", "istio.yaml")

// BenchmarkCacheMemory measures the live heap the host's cache takes per
// object, kind by kind, under the host's cache options
// (reconcilers.CacheOptions: our objects only, our managed fields only).
//
// It first writes what the plugins of examples/host/config/istio.yaml make
// for -cachemem.n Profiles shaped like the host benchmark's (every plugin
// serves them: 23 objects each), built by the plugins themselves and
// server-side applied with each plugin's field manager, as the host writes
// them, so that labels, owner references and managed fields are the real
// ones. Then, for each kind, it starts a cache with one informer, the way
// the host's scheme types it (typed, or unstructured for PodDefaults), and
// reports the heap it added, after garbage collection, per object it holds.
// The figure includes an informer's fixed cost, measured on a kind with no
// object of ours; each kind's log line gives its share.
//
// The measurement runs once per kind, whatever b.N; ns/op is left out, as
// the time to sync a few hundred objects says nothing about memory. With -v
// the log ends with a table of every kind:
//
//	go test ./reconcilers/ -run '^$' -bench CacheMemory -benchtime 1x
func BenchmarkCacheMemory(b *testing.B) {
	kinds := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Namespace"),
		networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		corev1.SchemeGroupVersion.WithKind("ResourceQuota"),
		corev1.SchemeGroupVersion.WithKind("LimitRange"),
		securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy"),
		egress.VirtualServiceKind,
		egress.DestinationRuleKind,
		egress.ServiceEntryKind,
		notebook.GroupVersionKind,
	}
	// Nothing reads the caches' logs; without a logger controller-runtime
	// prints a warning once the process is 30 s old.
	log.SetLogger(logr.Discard())
	installPluginCRDs(b)
	scheme := hostScheme(b)
	host := loadHost(b, cacheMemConfig)
	// Client-side limits far above what the API server takes, so that the
	// server sets the pace of the writes.
	writer, err := client.New(reconcilers.RateLimited(env.Config, 1000, 2000), client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	written := host.writeProfiles(b, writer, *cacheMemProfiles)

	// One HTTP client and one warmed REST mapper for every cache, as a
	// manager shares its own between its caches, so that neither the
	// transport nor API discovery counts against the first kind measured.
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, httpClient)
	if err != nil {
		b.Fatal(err)
	}
	for _, gvk := range slices.Concat(kinds, []schema.GroupVersionKind{kubeflowv1.GroupVersion.WithKind("Profile"), corev1.SchemeGroupVersion.WithKind("ConfigMap")}) {
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
	empty := readCache(b, env.Config, options(), corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if empty.objects != 0 {
		b.Fatalf("the ConfigMap cache holds %d objects, want none", empty.objects)
	}
	b.Logf("%d Profiles; a cache with one informer and no object takes %d bytes, included in every figure below", *cacheMemProfiles, empty.heap)

	rows := make([]string, 0, len(kinds))
	for _, gvk := range kinds {
		b.Run(gvk.Kind, func(b *testing.B) {
			if written[gvk] == 0 {
				b.Fatalf("the plugins wrote no %s: is the kind still what %s makes?", gvk.Kind, filepath.Base(cacheMemConfig))
			}
			stored := storedJSONSize(b, writer, gvk)
			var got cacheReading
			measured := false
			for b.Loop() {
				if !measured {
					got = readCache(b, env.Config, options(), gvk)
					measured = true
				}
			}
			// The cache may also hold objects that other tests of the
			// package left, never fewer than the ones written here.
			if got.objects < written[gvk] {
				b.Fatalf("the cache holds %d %ss, want at least the %d written", got.objects, gvk.Kind, written[gvk])
			}
			perObject := float64(got.heap) / float64(got.objects)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(perObject, "B/object")
			b.ReportMetric(float64(got.objects), "objects")
			b.Logf("%s: %d objects; JSON %d bytes stored, %d cached (after the transform), of which managed fields %d and %d; the informer's fixed cost is %.0f of the %.0f B/object",
				gvk.Kind, got.objects, stored.object, got.json.object, stored.managedFields, got.json.managedFields, float64(empty.heap)/float64(got.objects), perObject)
			rows = append(rows, fmt.Sprintf("%-20s %7d %9.0f %11d %13d", gvk.Kind, got.objects, perObject, stored.object, stored.managedFields))
		})
	}
	b.Logf("heap per cached object, by kind:\n%-20s %7s %9s %11s %13s\n%s", "KIND", "OBJECTS", "B/OBJECT", "JSON BYTES", "OF WHICH MF", strings.Join(rows, "\n"))
}

// cacheReading is what one cache of one kind took.
type cacheReading struct {
	// heap is the live heap the cache added, in bytes.
	heap int64
	// objects is how many objects the cache holds.
	objects int
	// json is the average size of one cached object encoded as JSON.
	json jsonSize
}

// jsonSize is the average size of an object encoded as JSON, and of its
// managed fields alone.
type jsonSize struct {
	object, managedFields int
}

// readCache starts a cache with opts and one informer, for gvk, and reads
// the live heap before it starts and once it has synced. The cache is
// stopped before it returns.
func readCache(b *testing.B, cfg *rest.Config, opts cache.Options, gvk schema.GroupVersionKind) cacheReading {
	b.Helper()
	// The host's controllers watch an owned kind through this object:
	// typed when the scheme knows the kind, unstructured otherwise.
	obj, err := plugins.NewObject(opts.Scheme, gvk)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()

	before := liveHeap()
	c, err := cache.New(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	informer, err := c.GetInformer(ctx, obj)
	if err != nil {
		b.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatalf("the %s cache did not sync", gvk.Kind)
	}
	after := liveHeap()
	runtime.KeepAlive(c)
	runtime.KeepAlive(informer)

	list, err := newList(opts.Scheme, gvk)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		b.Fatal(err)
	}
	size, n, err := averageJSON(list)
	if err != nil {
		b.Fatal(err)
	}
	cancel()
	if err := <-stopped; err != nil {
		b.Fatalf("the %s cache stopped: %v", gvk.Kind, err)
	}
	return cacheReading{heap: int64(after) - int64(before), objects: n, json: size}
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

// newList returns an empty list of gvk: typed when s knows it, unstructured
// otherwise, matching plugins.NewObject's choice for the items.
func newList(s *k8sruntime.Scheme, gvk schema.GroupVersionKind) (client.ObjectList, error) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if !s.Recognizes(listGVK) {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(listGVK)
		return u, nil
	}
	o, err := s.New(listGVK)
	if err != nil {
		return nil, err
	}
	list, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", listGVK)
	}
	return list, nil
}

// averageJSON returns the average JSON size of list's items, and how many
// there are.
func averageJSON(list client.ObjectList) (jsonSize, int, error) {
	var total jsonSize
	n := 0
	err := meta.EachListItem(list, func(o k8sruntime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		data, err := json.Marshal(o)
		if err != nil {
			return err
		}
		fields, err := json.Marshal(m.GetManagedFields())
		if err != nil {
			return err
		}
		total.object += len(data)
		total.managedFields += len(fields)
		n++
		return nil
	})
	if n == 0 || err != nil {
		return jsonSize{}, n, err
	}
	return jsonSize{object: total.object / n, managedFields: total.managedFields / n}, n, nil
}

// storedJSONSize returns the average JSON size of our objects of gvk as the
// API server returns them, every managed-fields entry included.
func storedJSONSize(b *testing.B, c client.Client, gvk schema.GroupVersionKind) jsonSize {
	b.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(b.Context(), list, client.MatchingLabelsSelector{Selector: plugins.ManagedSelector()}); err != nil {
		b.Fatal(err)
	}
	size, _, err := averageJSON(list)
	if err != nil {
		b.Fatal(err)
	}
	return size
}

// installPluginCRDs installs the CRDs of the kinds the plugins write that
// the package's control plane lacks: Istio's, from the istio.io/api module,
// and Kubeflow's PodDefault, from the notebook plugin's tests.
func installPluginCRDs(b *testing.B) {
	b.Helper()
	istio, err := testenv.IstioCRDs()
	if err != nil {
		b.Fatal(err)
	}
	podDefault := filepath.Join(testenv.RepoRoot(), "plugins", "notebook", "testdata", "poddefault-crd.yaml")
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{istio, podDefault}, ErrorIfPathMissing: true}); err != nil {
		b.Fatal(err)
	}
}

// hostScheme returns the scheme the host runs with (examples/host's
// server.NewScheme): built-in kinds, the Profile API and Istio's types.
// PodDefaults have no Go type there and are read unstructured.
func hostScheme(b *testing.B) *k8sruntime.Scheme {
	b.Helper()
	s := k8sruntime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), kubeflow.AddToScheme(s), istioscheme.AddToScheme(s)); err != nil {
		b.Fatal(err)
	}
	return s
}

// hostPlugin is one plugin's section of a host configuration file, as far
// as deciding which Profiles it serves and with what defaults goes.
type hostPlugin struct {
	// enabled is all, listed or off.
	enabled string
	// selector narrows enabled: all; nil selects every Profile.
	selector labels.Selector
	// defaults are the plugin's host defaults, as JSON.
	defaults json.RawMessage
}

// applies follows the host's rule: all serves the Profiles that the
// selector matches and those that list the plugin; listed, the default,
// only those that list it.
func (h hostPlugin) applies(p *kubeflowv1.Profile, kind string) bool {
	listed := plugins.Listed(p, kind)
	switch h.enabled {
	case "off":
		return false
	case "all":
		return listed || h.selector == nil || h.selector.Matches(labels.Set(p.Labels))
	default:
		return listed
	}
}

// host is what the plugins of a host configuration need to build their
// objects for a Profile, offline.
type host struct {
	reg     *plugins.Registry
	plugins map[string]hostPlugin
	// order runs core first, since the others write into the namespace it
	// makes, then the rest by kind.
	order []string
}

// loadHost reads the plugin sections of a host configuration file.
func loadHost(b *testing.B, path string) *host {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var file struct {
		Plugins map[string]struct {
			Enabled  string                `json:"enabled"`
			Selector *metav1.LabelSelector `json:"selector"`
			Defaults json.RawMessage       `json:"defaults"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	reg, err := plugins.NewRegistry(
		authpolicy.Definition(), core.Definition(), egress.Definition(), expose.Definition(),
		limitrange.Definition(), network.Definition(), notebook.Definition(), quotas.Definition(),
		rbac.Definition(), replicate.Definition(), volumes.Definition(),
	)
	if err != nil {
		b.Fatal(err)
	}
	h := &host{reg: reg, plugins: map[string]hostPlugin{}}
	for kind, sec := range file.Plugins {
		hp := hostPlugin{enabled: sec.Enabled, defaults: sec.Defaults}
		if sec.Selector != nil {
			if hp.selector, err = metav1.LabelSelectorAsSelector(sec.Selector); err != nil {
				b.Fatalf("%s: plugins.%s.selector: %v", path, kind, err)
			}
		}
		h.plugins[kind] = hp
		h.order = append(h.order, kind)
	}
	slices.SortFunc(h.order, func(x, y string) int {
		switch plugins.CoreKind {
		case x:
			return -1
		case y:
			return 1
		}
		return cmp.Compare(x, y)
	})
	return h
}

// cacheMemProfile returns the i-th Profile, shaped as the host benchmark's
// (examples/host/internal/bench) so that every plugin of the Istio
// configuration serves it: it lists the plugins enabled as listed
// (limitrange, expose, egress) and carries the labels that open the gated
// ones (the monitoring NetworkPolicy, the egress gateway).
func cacheMemProfile(i int) *kubeflowv1.Profile {
	raw := func(s string) *k8sruntime.RawExtension { return &k8sruntime.RawExtension{Raw: []byte(s)} }
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("cachemem-%05d", i),
			Labels: map[string]string{
				"profilekit.dev/allow-monitoring": "true",
				"egress.profilekit.dev/enabled":   "true",
			},
		},
		Spec: kubeflowv1.ProfileSpec{
			Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%05d@example.org", i)},
			Plugins: []kubeflowv1.Plugin{
				{TypeMeta: metav1.TypeMeta{Kind: limitrange.Kind}},
				{TypeMeta: metav1.TypeMeta{Kind: expose.Kind}, Spec: raw(`{"apps":[{"name":"rstudio","service":"rstudio","port":8787}]}`)},
				{TypeMeta: metav1.TypeMeta{Kind: egress.Kind}, Spec: raw(fmt.Sprintf(`{"hosts":[{"host":"data%05d.blob.core.windows.net"}]}`, i))},
			},
		},
	}
}

// writeProfiles writes n Profiles and their plugins' objects, a few at a
// time, and returns how many objects of each kind it applied.
func (h *host) writeProfiles(b *testing.B, c client.Client, n int) map[schema.GroupVersionKind]int {
	b.Helper()
	ctx := b.Context()
	written := make([]map[schema.GroupVersionKind]int, n)
	errs := make([]error, n)
	var failed atomic.Bool
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if failed.Load() {
					continue
				}
				written[i], errs[i] = h.write(ctx, c, cacheMemProfile(i))
				if errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	total := map[schema.GroupVersionKind]int{}
	for _, w := range written {
		for gvk, count := range w {
			total[gvk] += count
		}
	}
	return total
}

// write creates Profile p, or reads it back when it exists, so that owner
// references carry its uid. Then each plugin that serves it builds its
// objects with its config from the host's defaults and the Profile, exactly
// as offline rendering does (a recording Applier, reads through c), and
// they are server-side applied with the plugin's field manager.
func (h *host) write(ctx context.Context, c client.Client, p *kubeflowv1.Profile) (map[schema.GroupVersionKind]int, error) {
	err := c.Create(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		err = c.Get(ctx, client.ObjectKeyFromObject(p), p)
	}
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	written := map[schema.GroupVersionKind]int{}
	for _, kind := range h.order {
		sec := h.plugins[kind]
		if !sec.applies(p, kind) {
			continue
		}
		def, ok := h.reg.Get(kind)
		if !ok {
			return nil, fmt.Errorf("plugin %s: enabled in %s but not registered here", kind, filepath.Base(cacheMemConfig))
		}
		cfg, err := def.Decode(sec.defaults, p)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		rec := plugins.NewRecorder(kind, p, def.Owns, def.ApplierOptions()...)
		_, err = def.Plugin.Apply(ctx, plugins.Request{
			Profile: p,
			Config:  cfg,
			Client:  c,
			Objects: rec,
			Outside: plugins.NewOfflineOutside(kind, p),
		})
		if err != nil {
			return nil, fmt.Errorf("profile %s: plugin %s: %w", p.Name, kind, err)
		}
		for _, u := range rec.Recorded() {
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(plugins.FieldManagerFor(kind)), client.ForceOwnership)
			if err != nil {
				return nil, fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			written[u.GroupVersionKind()]++
		}
	}
	return written, nil
}
