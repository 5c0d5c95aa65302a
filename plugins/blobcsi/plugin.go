package blobcsi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/opa"
	"github.com/profilekit/profilekit/plugins"
)

// Reasons the plugin reports besides the shared ones.
const (
	// ReasonGrantsStale means that a grants source's last refresh was rejected; the
	// Profile keeps the volumes of its last good grants.
	ReasonGrantsStale = "GrantsStale"
	// ReasonGrantsNotSynced means that a grants source has no snapshot yet; nothing
	// of it is added or removed until it has.
	ReasonGrantsNotSynced = "GrantsNotSynced"
	// ReasonVolumeInUse means that a volume to remove or replace is still mounted by
	// pods, which are never deleted or evicted.
	ReasonVolumeInUse = "VolumeInUse"
	// ReasonVolumeDeletesHeld means that the pass would delete more volumes than the
	// cluster-wide limit allows within the window.
	ReasonVolumeDeletesHeld = "VolumeDeletesHeld"
	// ReasonUnknownPrincipal means that a bucket's grant names a service
	// principal the host's config does not have; that volume is not written
	// and an existing one is kept.
	ReasonUnknownPrincipal = "UnknownPrincipal"
)

// System names for the outside-call metric.
const (
	SystemAzureBlob = "AzureBlob"
	SystemOPA       = "OPA"
)

// Plugin writes a Profile's blob CSI volumes and creates its containers.
// The grants sources live in the plugin value, shared by every Profile it
// serves; the cluster-wide deletion count lives in the cluster (a ConfigMap
// the plugin owns), so that a restart does not reset it.
type Plugin struct {
	st *state
}

var _ plugins.Plugin = Plugin{}

type state struct {
	transport *http.Client
	tokens    tokenCache

	mu      sync.Mutex
	sources map[string]opa.Source
}

// Option configures the plugin.
type Option func(*state)

// WithHTTPClient sends every Azure request through h (a proxy, or a test
// that counts requests).
func WithHTTPClient(h *http.Client) Option { return func(s *state) { s.transport = h } }

// Definition returns the blobcsi plugin.
func Definition(opts ...Option) plugins.Definition {
	st := &state{}
	for _, o := range opts {
		o(st)
	}
	p := Plugin{st: st}
	// The plugin reads its volumes and claims whole: their claim
	// references and phases say what is bound.
	owns := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	}
	return plugins.Definition{
		Plugin:       p,
		NewConfig:    func() any { return NewConfig() },
		Owns:         owns,
		Reads:        owns,
		OutsideState: true,
		Runner:       p.run,
	}
}

// Kind returns "blobcsi".
func (Plugin) Kind() string { return Kind }

// Apply creates the Profile's containers, writes its volumes, and removes
// the volumes it no longer has, within the rules: no pod is ever touched, a
// volume a pod mounts waits for it, and the cluster-wide deletion limit
// holds.
func (p Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	grants, unknown, gerr := p.grants(ctx, req, cfg)
	vols, err := Desired(cfg, req.Profile, grants)
	if err != nil {
		return plugins.Result{}, errors.Join(err, gerr)
	}
	var res plugins.Result
	errs := []error{gerr}
	live, err := p.live(ctx, req)
	if err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	keepBoundNames(cfg, plugins.Namespace(req.Profile), vols, live)

	// Containers first: a volume is written only once its container exists.
	azure := containers{reader: req.LiveReader(), transport: p.st.transport, principals: cfg.Principals, tokens: &p.st.tokens}
	ready := vols[:0:0]
	failed := map[string]bool{}
	for _, v := range vols {
		if _, err := cfg.MountFor(v); err != nil {
			// Only this volume waits for the config; nothing is removed.
			errs = append(errs, err)
			failed[v.Claim] = true
			continue
		}
		if v.Source != "" {
			ready = append(ready, v)
			continue
		}
		// The Profile's UID is part of the desired state: the container
		// carries it as proof, and a Profile made again under the same name
		// must prove its claim to the container afresh.
		want := map[string]string{"account": v.Instance.Account, "endpoint": v.Instance.endpoint(), "container": v.Container, "profileUID": string(req.Profile.UID)}
		// Only a key the host made is proof of an earlier version's
		// container; one moved from a record the tenant could write is not.
		take := takeOver{adopt: v.Instance.AdoptContainers, legacy: func(ctx context.Context) (bool, error) {
			keys, err := req.Outside.Made(ctx)
			return slices.Contains(keys, legacyContainerKey(v.Instance.Name)), err
		}, earlier: req.Outside.Predecessors}
		called, err := req.Outside.Ensure(ctx, SystemAzureBlob, containerKey(v.Instance.Name), want, func(ctx context.Context) error {
			return azure.ensure(ctx, v.Instance, v.Container, proofFor(req), take)
		})
		if err != nil {
			// No volume is written for a container that is not there or
			// not ours, and a volume that exists for it is not removed.
			errs = append(errs, err)
			failed[v.Claim] = true
			continue
		}
		if called {
			// The record of an earlier version is replaced by this one.
			errs = append(errs, req.Outside.Forget(ctx, legacyContainerKey(v.Instance.Name)))
		}
		action := plugins.Unchanged
		if called {
			action = plugins.Configured
		}
		res.Add(plugins.Change{Kind: "BlobContainer", Name: v.Instance.Account + "/" + v.Container, Action: action})
		ready = append(ready, v)
	}

	ns := plugins.Namespace(req.Profile)
	var desired []runtime.ApplyConfiguration
	var replace []pair
	for _, v := range ready {
		pv, pvc := live.pvs[v.PV], live.pvcs[v.Claim]
		if why := mustReplace(cfg, v, pv, pvc); why != "" {
			replace = append(replace, pair{claim: pvc, pv: pv, why: why, name: v.Claim})
			continue
		}
		if terminating(pv) || terminating(pvc) {
			// The old pair is going; the new one follows once it is gone.
			errs = append(errs, fmt.Errorf("volume %s: waiting for the previous PersistentVolume and claim to be deleted", v.Claim))
			continue
		}
		if pv != nil {
			patched, err := rebind(ctx, req, pv, pvc)
			if err != nil {
				// The pair stays as it is: every volume the Profile
				// wants is kept from removal below.
				errs = append(errs, err)
				continue
			}
			if patched {
				res.Add(plugins.Change{Kind: "PersistentVolume", Name: pv.Name, Action: plugins.Configured})
			}
		}
		desired = append(desired, BuildPV(cfg, ns, v), BuildPVC(cfg, ns, v))
	}
	applied, err := req.Objects.Apply(ctx, desired...)
	res.Merge(applied)
	errs = append(errs, err)

	// What is no longer wanted: ours, not desired, not from a source whose
	// grants are unknown now, not a volume whose container failed.
	keep := map[string]bool{}
	for _, v := range vols {
		keep["pvc/"+v.Claim], keep["pv/"+v.PV] = true, true
	}
	var stale []pair
	named, err := p.claimsNamed(ctx, req, live, func(name string) bool {
		return !keep["pvc/"+name] && !unknown[live.pvcs[name].Labels[LabelSource]] && !failed[name]
	})
	if err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	for _, name := range slices.Sorted(maps.Keys(live.pvcs)) {
		pvc := live.pvcs[name]
		if keep["pvc/"+name] || unknown[pvc.Labels[LabelSource]] || failed[name] || !named[name] {
			continue
		}
		stale = append(stale, pair{claim: pvc, name: name})
	}
	for _, name := range slices.Sorted(maps.Keys(live.pvs)) {
		pv := live.pvs[name]
		if keep["pv/"+name] || unknown[pv.Labels[LabelSource]] {
			continue
		}
		stale = append(stale, pair{pv: pv, name: name})
	}
	removed, err := p.remove(ctx, req, cfg, live, append(replace, stale...))
	res.Merge(removed)
	errs = append(errs, err)
	return res, errors.Join(errs...)
}

// containerKey is the outside-state key of a Profile's container in an
// instance, made or taken over with the proof in its metadata.
func containerKey(instance string) string { return "owned-container/" + instance }

// legacyContainerKey is the key under which versions that wrote no proof
// recorded a container they made: it is the proof for those containers.
func legacyContainerKey(instance string) string { return "container/" + instance }

// proofFor is the proof of the Profile a request is for.
func proofFor(req plugins.Request) proof {
	return proof{Profile: req.Profile.Name, UID: string(req.Profile.UID)}
}

// liveState is the plugin's PersistentVolumes and claims for a Profile.
type liveState struct {
	pvs  map[string]*corev1.PersistentVolume
	pvcs map[string]*corev1.PersistentVolumeClaim
}

// claimsNamed returns the names of the claims in namespace ns that a
// PersistentVolume of the plugin's names. Only those are the plugin's to
// delete: a claim's labels are its tenant's to write, and a tenant who
// copied ours onto claims of its own would have the plugin delete them,
// each counted against the cluster-wide allowance of volume deletions,
// which would then hold every other tenant's. PersistentVolumes are
// cluster-scoped, out of a tenant's reach, and the plugin makes one per
// claim, so a tenant can have it delete no more claims than it made. The
// name is enough, not the uid: a volume names its claim without one until
// it binds, and keeps a deleted claim's until rebind clears it.
func (st liveState) claimsNamed(ns string) map[string]bool {
	named := map[string]bool{}
	for _, pv := range st.pvs {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns {
			named[ref.Name] = true
		}
	}
	return named
}

// claimsNamed returns live's claimsNamed, unless a claim that candidate
// picks is not among them: the cache may not show its volume yet, so the
// volumes are then listed from the API server instead.
func (p Plugin) claimsNamed(ctx context.Context, req plugins.Request, live liveState, candidate func(claim string) bool) (map[string]bool, error) {
	ns := plugins.Namespace(req.Profile)
	named := live.claimsNamed(ns)
	for name := range live.pvcs {
		if !named[name] && candidate(name) {
			now, err := p.liveFrom(ctx, req, req.LiveReader())
			if err != nil {
				return nil, err
			}
			return liveState{pvs: now.pvs}.claimsNamed(ns), nil
		}
	}
	return named, nil
}

// live lists the Profile's volumes and claims through req.Client.
func (p Plugin) live(ctx context.Context, req plugins.Request) (liveState, error) {
	return p.liveFrom(ctx, req, req.Client)
}

// liveFrom lists the Profile's volumes and claims through r.
func (p Plugin) liveFrom(ctx context.Context, req plugins.Request, r client.Reader) (liveState, error) {
	st := liveState{pvs: map[string]*corev1.PersistentVolume{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	if req.Outside != nil && req.Outside.Offline() {
		return st, nil
	}
	sel := client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(Kind, req.Profile.Name)}
	var pvs corev1.PersistentVolumeList
	if err := r.List(ctx, &pvs, sel); err != nil {
		return st, fmt.Errorf("list PersistentVolumes: %w", err)
	}
	for i := range pvs.Items {
		st.pvs[pvs.Items[i].Name] = &pvs.Items[i]
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs, sel, client.InNamespace(plugins.Namespace(req.Profile))); err != nil {
		return st, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	for i := range pvcs.Items {
		st.pvcs[pvcs.Items[i].Name] = &pvcs.Items[i]
	}
	return st, nil
}

func terminating(o client.Object) bool {
	return o != nil && !isNil(o) && o.GetDeletionTimestamp() != nil
}

func isNil(o client.Object) bool {
	switch x := o.(type) {
	case *corev1.PersistentVolume:
		return x == nil
	case *corev1.PersistentVolumeClaim:
		return x == nil
	}
	return false
}
