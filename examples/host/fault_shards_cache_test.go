package main

// This file holds the test that shards divide a host's memory and requests,
// not only its Profiles.

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

var shardProfiles = flag.Int("shards.n", 150, "TestShardsDivideCacheAndRequests: Profiles per shard")

// shardedKinds are the kinds faultConfig's plugins write.
var shardedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ResourceQuota"},
	{Version: "v1", Kind: "LimitRange"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

// TestShardsDivideCacheAndRequests runs two hosts over disjoint halves of
// 300 Profiles (-shards.n per shard). Each writes its shard's label onto every object, caches its
// own shard's objects and none of the other's, holds about half the heap a
// host of both shards would, and sends about half the requests. A Profile
// moved from one shard to the other is taken over in place: its objects
// keep their UIDs, carry the new shard's label, and leave the first host's
// cache for the second's.
func TestShardsDivideCacheAndRequests(t *testing.T) {
	perShard := *shardProfiles
	id := rand.String(5)
	shards := []string{"a", "b"}
	value := func(s string) string { return "cache-" + s + "-" + id }
	names := map[string][]string{}
	hosts := map[string]*faultHost{}
	cfgs := map[string]*hostconfig.Config{}
	for _, s := range shards {
		cfg, reg := faultConfig(t, value(s), "shard-cache-"+s+"-"+id, 200)
		cfgs[s] = cfg
		hosts[s] = startHost(t, "shard "+s, env.Config, cfg, reg, true)
	}
	for i := range perShard {
		for _, s := range shards {
			name := fmt.Sprintf("sc-%s-%s-%03d", s, id, i)
			faultProfile(t, env.Client, name, value(s), i%2 == 0)
			names[s] = append(names[s], name)
		}
	}
	start := time.Now()
	waitConverged(t, env.Client, time.Minute+time.Duration(perShard)*100*time.Millisecond, slices.Concat(names["a"], names["b"])...)
	t.Logf("%d Profiles in two shards converged %s after the last was created", 2*perShard, time.Since(start).Round(time.Millisecond))

	written := map[string]int{}
	for _, s := range shards {
		want := perShard * 7 / 2 // quota, limit range, default-deny; allow-monitoring for half
		written[s] = countStored(t, value(s))
		if written[s] != want {
			t.Errorf("shard %s: %d objects carry its label, want %d", s, written[s], want)
		}
		if got := cachedByShard(t, hosts[s]); len(got) != 1 || got[value(s)] != want {
			t.Errorf("host %s caches objects by shard %v, want only its own %d", s, got, want)
		}
	}
	requests, writes := map[string]int{}, map[string]int{}
	for _, s := range shards {
		requests[s], writes[s] = len(hosts[s].log.all()), len(hosts[s].log.writes())
	}
	for _, s := range shards {
		t.Logf("host %s: %d requests (%.2f of both hosts'), %d writes (%.2f)", s, requests[s],
			float64(requests[s])/float64(requests["a"]+requests["b"]), writes[s], float64(writes[s])/float64(writes["a"]+writes["b"]))
		if share := float64(writes[s]) / float64(writes["a"]+writes["b"]); share < 0.45 || share > 0.55 {
			t.Errorf("host %s sent %.2f of the writes, want about half", s, share)
		}
		if share := float64(requests[s]) / float64(requests["a"]+requests["b"]); share < 0.4 || share > 0.6 {
			t.Errorf("host %s sent %.2f of the requests, want about half", s, share)
		}
	}

	moveShard(t, hosts, names["a"][0], value("a"), value("b"))
	unlabelled(t, names["b"][1], value("b"))
	tenantCannotReshard(t, names["b"][2], value("a"))

	// The memory each host's cache takes, measured with the hosts stopped:
	// caches with each host's options, and with those of a host of both.
	for _, s := range shards {
		if err := hosts[s].stop(); err != nil {
			t.Fatal(err)
		}
	}
	settleHeap(t)
	both, err := labels.Parse(fmt.Sprintf("%s in (%s,%s)", shardLabel, value("a"), value("b")))
	if err != nil {
		t.Fatal(err)
	}
	none, err := labels.Parse(shardLabel + "=cache-none-" + id)
	if err != nil {
		t.Fatal(err)
	}
	options := shardCacheOptions(t, env.Config, cfgs["a"].UnshardedNamespaces())
	// Each cache is measured three times and its median kept: what the
	// rest of the process frees meanwhile (a stopped host's last
	// goroutines) shows as a cache that takes less than none.
	const rounds = 3
	heaps := map[string][]int64{}
	objects := map[string]int{}
	for range rounds {
		for name, shard := range map[string]labels.Selector{"a": cfgs["a"].Shard(), "b": cfgs["b"].Shard(), "both": both, "none": none} {
			var h int64
			objects[name] = 0
			for _, gvk := range shardedKinds {
				got := readCache(t, env.Config, options(shard), gvk, metadataOnly(gvk))
				h += got.heap
				objects[name] += got.objects
			}
			heaps[name] = append(heaps[name], h)
		}
	}
	heap := map[string]int64{}
	for name, hs := range heaps {
		slices.Sort(hs)
		heap[name] = hs[rounds/2]
	}
	if objects["a"]+objects["b"] != objects["both"] || objects["a"] != written["a"]-4 || objects["none"] != 0 {
		t.Errorf("caches hold %v objects, want %d in a (one Profile of four objects moved to b), a and b together as many as both, and none in none", objects, written["a"]-4)
	}
	// What a cache takes with no object in it (informers, their watches)
	// is the same for every shard; the rest grows with the objects.
	fixed := heap["none"]
	for _, s := range shards {
		share := float64(heap[s]-fixed) / float64(heap["both"]-fixed)
		t.Logf("host %s's cache: %d objects, %d KiB of heap beyond an empty cache's %d KiB: %.2f of a host of both shards (%d objects, %d KiB)",
			s, objects[s], (heap[s]-fixed)>>10, fixed>>10, share, objects["both"], (heap["both"]-fixed)>>10)
		if share < 0.4 || share > 0.6 {
			t.Errorf("host %s's cache takes %.2f of the heap a host of both shards takes, want about half", s, share)
		}
	}
}

// moveShard relabels Profile name from shard from to shard to and waits
// until the second host has taken it over: the same objects (UIDs),
// relabelled, in the second host's cache and not in the first's.
func moveShard(t *testing.T, hosts map[string]*faultHost, name, from, to string) {
	t.Helper()
	ctx := t.Context()
	uids := storedUIDs(t, name)
	var p kubeflowv1.Profile
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels[shardLabel] = to
	if err := env.Client.Patch(ctx, &p, patch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		for k, uid := range storedUIDs(t, name) {
			if uids[k] != uid {
				return false, fmt.Sprintf("%s is a new object", k)
			}
		}
		for _, gvk := range shardedKinds {
			for h, want := range map[string]bool{"a": false, "b": true} {
				list := cachedList(t, hosts[h], gvk, client.InNamespace(name))
				if got := meta.LenList(list) > 0; got != want {
					return false, fmt.Sprintf("host %s's cache holds %s of %s: %t", h, gvk.Kind, name, got)
				}
				err := meta.EachListItem(list, func(o k8sruntime.Object) error {
					if l := o.(metav1Object).GetLabels()[apply.ShardKey(shardLabel)]; l != to {
						return fmt.Errorf("%s of %s labelled %s", gvk.Kind, name, l)
					}
					return nil
				})
				if err != nil {
					return false, err.Error()
				}
			}
		}
		return true, ""
	})
	waitConverged(t, env.Client, 30*time.Second, name)
	t.Logf("Profile %s moved from %s to %s: %d objects relabelled in place, taken over in %s", name, from, to, len(uids), time.Since(start).Round(time.Millisecond))
}

// unlabelled takes the shard label off the ResourceQuota of Profile name, as
// a host that did not shard wrote it (or anyone who may edit it), and waits
// until the host has put it back on the same object.
func unlabelled(t *testing.T, name, shard string) {
	t.Helper()
	ctx := t.Context()
	q := apply.NewMetadata(shardedKinds[0])
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, q); err != nil {
		t.Fatal(err)
	}
	uid := q.UID
	patch := []byte(`{"metadata":{"labels":{"` + apply.ShardKey(shardLabel) + `":null}}}`)
	if err := env.Client.Patch(ctx, q, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, q); err != nil {
			return false, err.Error()
		}
		return q.Labels[apply.ShardKey(shardLabel)] == shard && q.UID == uid, fmt.Sprintf("quota of %s: uid %s, shard label %q", name, q.UID, q.Labels[apply.ShardKey(shardLabel)])
	})
	t.Logf("the shard label taken off the quota of %s was back on the same object in %s", name, time.Since(start).Round(time.Millisecond))
}

// tenantCannotReshard: the tenant of Profile name, with Kubeflow's rights
// in its namespace, can neither move its objects to another shard (or
// hide them from its host) by their shard label, nor move its Profile:
// both are the host's and the platform's to write.
func tenantCannotReshard(t *testing.T, name, other string) {
	t.Helper()
	tenant := testhost.Tenant(t, env, name)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+apply.ShardKey(shardLabel)+`":"`+other+`"}}}`))
	tried := 0
	for _, gvk := range shardedKinds {
		list := apply.NewMetadataList(gvk)
		if err := env.Client.List(t.Context(), list, client.InNamespace(name)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			tried++
			if err := tenant.Patch(t.Context(), o, patch); !apierrors.IsForbidden(err) {
				t.Errorf("the tenant relabelled %s %s/%s into shard %s: %v, want Forbidden", gvk.Kind, name, o.Name, other, err)
			}
		}
	}
	if tried != 4 {
		t.Errorf("the tenant tried %d objects of Profile %s, want its 4", tried, name)
	}
	profilePatch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+shardLabel+`":"`+other+`"}}}`))
	if err := tenant.Patch(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}, profilePatch); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant moved its Profile %s to shard %s: %v, want Forbidden", name, other, err)
	}
}

// metav1Object is what every cached object is.
type metav1Object interface{ GetLabels() map[string]string }

// countStored returns how many objects of shardedKinds the API server holds
// with our label and shard label value.
func countStored(t *testing.T, value string) int {
	t.Helper()
	n := 0
	for _, gvk := range shardedKinds {
		list := apply.NewMetadataList(gvk)
		if err := env.Client.List(t.Context(), list, client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, apply.ShardKey(shardLabel): value}); err != nil {
			t.Fatal(err)
		}
		n += len(list.Items)
	}
	return n
}

// storedUIDs returns the UIDs of the objects of shardedKinds in the
// namespace of Profile name, by kind and name.
func storedUIDs(t *testing.T, name string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, gvk := range shardedKinds {
		list := apply.NewMetadataList(gvk)
		if err := env.Client.List(t.Context(), list, client.InNamespace(name)); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[gvk.Kind+" "+o.Name] = o.UID
		}
	}
	return out
}

// cachedByShard counts the objects of shardedKinds in the host's cache by
// their shard label value.
func cachedByShard(t *testing.T, h *faultHost) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, gvk := range shardedKinds {
		err := meta.EachListItem(cachedList(t, h, gvk), func(o k8sruntime.Object) error {
			l := o.(metav1Object).GetLabels()
			if v, ok := l[shardLabel]; ok {
				return fmt.Errorf("%s carries the Profile's own shard key %s=%s", gvk.Kind, shardLabel, v)
			}
			out[l[apply.ShardKey(shardLabel)]]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// cachedList lists the host's cached objects of gvk in the form the host
// caches it.
func cachedList(t *testing.T, h *faultHost, gvk schema.GroupVersionKind, opts ...client.ListOption) client.ObjectList {
	t.Helper()
	var list client.ObjectList = apply.NewMetadataList(gvk)
	if !metadataOnly(gvk) {
		var err error
		if list, err = apply.NewList(env.Client.Scheme(), gvk); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.cache.List(t.Context(), list, opts...); err != nil {
		t.Fatal(err)
	}
	return list
}

// shardCacheOptions returns a function that gives a host's cache options
// for a shard, reaching the API server at cfg. Every cache shares one HTTP
// client and one REST mapper that knows shardedKinds, as a manager's caches
// do, so that neither counts against the first cache measured.
func shardCacheOptions(t *testing.T, cfg *rest.Config, unsharded []string) func(labels.Selector) cache.Options {
	t.Helper()
	scheme, err := server.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range shardedKinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			t.Fatal(err)
		}
	}
	return func(shard labels.Selector) cache.Options {
		opts := reconcilers.CacheOptions(shard, unsharded...)
		opts.Scheme, opts.Mapper, opts.HTTPClient = scheme, mapper, httpClient
		return opts
	}
}

// settleHeap waits until the live heap stops shrinking: the goroutines of
// hosts just stopped let go of their caches a while after the stop returns,
// and a cache measured meanwhile would seem to take less than nothing.
func settleHeap(t *testing.T) {
	t.Helper()
	last := liveHeap()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		time.Sleep(200 * time.Millisecond)
		now := liveHeap()
		shrunk := now+32<<10 < last
		last = now
		return !shrunk, fmt.Sprintf("the live heap is still shrinking: %d KiB", now>>10)
	})
}
