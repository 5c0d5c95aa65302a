package blobcsi_test

// This file holds what the plugin's tests share: the host configuration on
// Azurite and OPA, the grants documents, the host each test starts with its
// Azure requests and Apply calls counted, and readers of claims, PVs,
// containers and metrics.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// counter counts the requests sent to Azure (Azurite here).
type counter struct {
	mu    sync.Mutex
	reqs  []string
	inner http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	c.mu.Unlock()
	return c.inner.RoundTrip(r)
}

func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reqs
	c.reqs = nil
	return out
}

// grantsDoc is the example policy's data: which teams read and write which
// shared buckets.
type grantsDoc struct {
	Classifications []string                  `json:"classifications"`
	Teams           map[string][]string       `json:"teams"`
	Buckets         map[string]map[string]any `json:"buckets"`
}

// putGrants puts d as the test's grants document.
func putGrants(t *testing.T, d grantsDoc) {
	t.Helper()
	if err := serversOf(t).opa.PutData(t.Context(), "storage", d); err != nil {
		t.Fatal(err)
	}
}

// perProfile counts Apply calls per Profile.
type perProfile struct {
	plugins.Plugin
	mu sync.Mutex
	n  map[string]int
	// lag, when set, gives each pass the claims the pass before it read.
	lag *claimLag
	// failClaims fails the passes' uncached reads of claims while set.
	failClaims atomic.Bool
	// revoked holds, per Profile, the changes its Revokes reported.
	revoked map[string][]plugins.Change
}

func (p *perProfile) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	p.mu.Lock()
	p.n[req.Profile.Name]++
	lag := p.lag
	p.mu.Unlock()
	if lag != nil {
		req.Client = lagging{Cluster: req.Client, lag: lag}
	}
	req.Live = claimReads{Reader: req.LiveReader(), fail: &p.failClaims}
	return p.Plugin.Apply(ctx, req)
}

func (p *perProfile) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	req.Live = claimReads{Reader: req.LiveReader(), fail: &p.failClaims}
	res, err := p.Plugin.Revoke(ctx, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revoked == nil {
		p.revoked = map[string][]plugins.Change{}
	}
	p.revoked[req.Profile.Name] = append(p.revoked[req.Profile.Name], res.Changes...)
	return res, err
}

// revokedContainers returns what the Revokes of Profile name reported of
// its containers: "account/container action", in the order reported.
func (p *perProfile) revokedContainers(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.revoked[name] {
		if c.Kind == "BlobContainer" {
			out = append(out, c.Name+" "+string(c.Action))
		}
	}
	return out
}

// lagClaims makes every later pass read its claims as the pass before it
// did: a cache one pass behind.
func (p *perProfile) lagClaims() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lag = &claimLag{last: map[string]corev1.PersistentVolumeClaimList{}}
}

// hideClaims makes every later pass read no claims at all: a cache that
// has not seen them yet.
func (p *perProfile) hideClaims() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lag = &claimLag{hide: true}
}

// holdVolumes makes every later pass read the PersistentVolumes as they
// are now: a cache that does not show what changes from here on.
func (p *perProfile) holdVolumes(t *testing.T) {
	t.Helper()
	var held corev1.PersistentVolumeList
	if err := env.Client.List(t.Context(), &held); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lag = &claimLag{volumes: &held}
}

// seeClaims makes later passes read the claims as they are.
func (p *perProfile) seeClaims() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lag = nil
}

// claimLag is the claims each namespace's last pass read, or none when
// hide is set; or, when volumes is set, the PersistentVolumes every pass
// reads.
type claimLag struct {
	mu      sync.Mutex
	last    map[string]corev1.PersistentVolumeClaimList
	hide    bool
	volumes *corev1.PersistentVolumeList
}

// lagging is a client whose lists of claims are one pass behind, or empty,
// or whose lists of PersistentVolumes answer a held copy.
type lagging struct {
	plugins.Cluster
	lag *claimLag
}

func (l lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if pvs, ok := list.(*corev1.PersistentVolumeList); ok && l.lag.volumes != nil {
		var o client.ListOptions
		o.ApplyOptions(opts)
		pvs.Items = nil
		for _, pv := range l.lag.volumes.Items {
			if o.LabelSelector == nil || o.LabelSelector.Matches(labels.Set(pv.Labels)) {
				pvs.Items = append(pvs.Items, *pv.DeepCopy())
			}
		}
		return nil
	}
	pvcs, ok := list.(*corev1.PersistentVolumeClaimList)
	if !ok || l.lag.last == nil && !l.lag.hide {
		return l.Cluster.List(ctx, list, opts...)
	}
	if err := l.Cluster.List(ctx, pvcs, opts...); err != nil {
		return err
	}
	if l.lag.hide {
		pvcs.Items = nil
		return nil
	}
	var o client.ListOptions
	o.ApplyOptions(opts)
	l.lag.mu.Lock()
	defer l.lag.mu.Unlock()
	now := *pvcs.DeepCopy()
	if before, seen := l.lag.last[o.Namespace]; seen {
		before.DeepCopyInto(pvcs)
	}
	l.lag.last[o.Namespace] = now
	return nil
}

func (p *perProfile) counts(names ...string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, n := range names {
		out[n] = p.n[n]
	}
	return out
}

// settled waits until no pass of the named Profiles has run for three
// seconds (kube-controller-manager's last bindings are events too, seconds
// later on a busy machine) and returns their counts.
func (p *perProfile) settled(t *testing.T, names ...string) map[string]int {
	t.Helper()
	last, since := p.counts(names...), time.Now()
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		if now := p.counts(names...); !cmp.Equal(now, last) {
			last, since = now, time.Now()
		}
		return time.Since(since) >= 3*time.Second, fmt.Sprintf("passes still running: %v", last)
	})
	return last
}

type harness struct {
	host    *testhost.Host
	azure   *counter
	applies *perProfile
	// shard keeps each test's host to its own Profiles.
	shard map[string]string
}

func (h *harness) profile(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	testhost.NewProfile(t, env.Client, name, h.shard, ps...)
}

func start(t *testing.T, cfg []byte, opts ...reconcilers.Option) *harness {
	t.Helper()
	return startShard(t, map[string]string{"test": strings.ToLower(rand.String(6))}, cfg, opts...)
}

// startShard runs a host, with fresh plugin state, for the Profiles labelled
// shard. A second call for one shard after the first host stopped is a
// restart.
func startShard(t *testing.T, shard map[string]string, cfg []byte, opts ...reconcilers.Option) *harness {
	t.Helper()
	return startThrough(t, http.DefaultTransport, shard, cfg, opts...)
}

// startThrough is startShard with the plugin's Azure requests sent through
// inner.
func startThrough(t *testing.T, inner http.RoundTripper, shard map[string]string, cfg []byte, opts ...reconcilers.Option) *harness {
	t.Helper()
	az := &counter{inner: inner}
	def := blobcsi.Definition(blobcsi.WithHTTPClient(&http.Client{Transport: az}))
	pp := &perProfile{Plugin: def.Plugin, n: map[string]int{}}
	def.Plugin = pp
	h := testhost.Start(t, env, testhost.Plugin{Def: def, Options: append([]reconcilers.Option{
		reconcilers.WithDefaults(cfg), reconcilers.WithShard(labels.SelectorFromSet(shard))}, opts...)})
	return &harness{host: h, azure: az, applies: pp, shard: shard}
}

// claimReads is a pass's reader without a cache, whose reads of claims
// fail while fail is set: the API server out of reach for the reads that
// confirm a deletion.
type claimReads struct {
	client.Reader
	fail *atomic.Bool
}

var errClaimRead = errors.New("the API server did not answer (injected)")

// List fails the lists of claims and of volumes while fail is set.
func (r claimReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeList:
		if r.fail.Load() {
			return errClaimRead
		}
	}
	return r.Reader.List(ctx, list, opts...)
}

func (r claimReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.PersistentVolumeClaim); ok && r.fail.Load() {
		return errClaimRead
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func blobPlugin(instances ...string) kubeflowv1.Plugin {
	var raw []byte
	if len(instances) > 0 {
		raw, _ = json.Marshal(map[string]any{"instances": instances})
	}
	p := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: blobcsi.Kind}}
	if raw != nil {
		p.Spec = &runtime.RawExtension{Raw: raw}
	}
	return p
}

func containers(t *testing.T) []string {
	t.Helper()
	az := serversOf(t).azurite
	cred, err := service.NewSharedKeyCredential(az.Account, az.Key)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.NewClientWithSharedKeyCredential(az.BlobURL+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	pager := svc.NewListContainersPager(nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.ContainerItems {
			names = append(names, *c.Name)
		}
	}
	return names
}

func claims(t *testing.T, ns string) map[string]corev1.PersistentVolumeClaim {
	t.Helper()
	var l corev1.PersistentVolumeClaimList
	if err := env.Client.List(t.Context(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, c := range l.Items {
		out[c.Name] = c
	}
	return out
}

func pv(t *testing.T, name string) (*corev1.PersistentVolume, error) {
	t.Helper()
	var v corev1.PersistentVolume
	err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &v)
	return &v, err
}

// liveClaims returns the claims that are not being deleted, name -> access mode.
func liveClaims(t *testing.T, ns string) map[string]string {
	out := map[string]string{}
	for n, c := range claims(t, ns) {
		if c.DeletionTimestamp == nil {
			out[n] = string(c.Spec.AccessModes[0])
		}
	}
	return out
}

func waitClaims(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		got := liveClaims(t, ns)
		d := cmp.Diff(want, got)
		return d == "", "claims (-want +got):\n" + d
	})
}

func unique(prefix string) string { return prefix + "-" + rand.String(5) }
