package apply_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/reconcilers"
)

// cachedServer is a real API server with a namespace, the host's cache (our
// objects only, our managed fields only), and a client that reads through
// that cache and counts every request it and the cache send.
type cachedServer struct {
	env       *testenv.Env
	counter   *testenv.Counter
	informers cache.Cache
	client    client.Client
}

// startCachedServer starts a cachedServer with namespace ns. The informers
// of warm are started before it returns, so that the test's reads are
// answered from the cache and not by starting one.
func startCachedServer(t *testing.T, ns string, warm ...client.Object) *cachedServer {
	t.Helper()
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	counter := &testenv.Counter{}
	cfg := counter.Counting(env.Config)
	opts := reconcilers.CacheOptions(nil)
	opts.Scheme = env.Scheme
	informers, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	for _, obj := range warm {
		if _, err := informers.GetInformer(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers, Unstructured: true}})
	if err != nil {
		t.Fatal(err)
	}
	return &cachedServer{env: env, counter: counter, informers: informers, client: c}
}
