package blobcsi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

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
)

// System names for the outside-call metric.
const (
	SystemAzureBlob = "AzureBlob"
	SystemOPA       = "OPA"
)

// Plugin writes a Profile's blob CSI volumes and creates its containers.
// The grants sources and the cluster-wide deletion count live in the
// plugin value, shared by every Profile it serves.
type Plugin struct {
	st *state
}

var _ plugins.Plugin = Plugin{}

type state struct {
	transport *http.Client

	mu      sync.Mutex
	sources map[string]opa.Source
	reader  client.Reader
	deletes []time.Time
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

// run starts the grants sources of the host's config and enqueues the
// Profiles whose grants change.
func (p Plugin) run(ctx context.Context, rt plugins.Runtime) error {
	cfg, ok := rt.Config.(*Config)
	if !ok {
		return fmt.Errorf("config is %T", rt.Config)
	}
	sources := map[string]opa.Source{}
	var cs kubernetes.Interface
	for _, gs := range cfg.GrantSources {
		o := opa.Options{MaxDropShare: gs.MaxDropShare}
		switch {
		case gs.OPA != nil:
			c, err := opa.NewClient(gs.OPA.URL)
			if err != nil {
				return err
			}
			o.Interval = gs.OPA.Interval.Duration
			src, err := opa.NewPoller(gs.Name, c, gs.OPA.Path, nil, o)
			if err != nil {
				return err
			}
			sources[gs.Name] = src
		case gs.ConfigMap != nil:
			if cs == nil {
				var err error
				if cs, err = kubernetes.NewForConfig(rt.RESTConfig); err != nil {
					return err
				}
			}
			src, err := opa.NewConfigMapSource(gs.Name, cs, gs.ConfigMap.Namespace, gs.ConfigMap.Name, o)
			if err != nil {
				return err
			}
			sources[gs.Name] = src
		}
	}
	p.st.mu.Lock()
	p.st.sources, p.st.reader = sources, rt.Reader
	p.st.mu.Unlock()
	var wg sync.WaitGroup
	for _, src := range sources {
		wg.Go(func() {
			_ = src.Run(ctx, func(ns []string) { rt.Enqueue(ns...) })
		})
	}
	wg.Wait()
	return nil
}

// grants returns the snapshots of the config's sources, the sources whose
// volumes must not be removed now (not synced, or not running), and the
// errors to report.
func (p Plugin) grants(ctx context.Context, req plugins.Request, cfg *Config) (map[string]opa.Grants, map[string]bool, error) {
	p.st.mu.Lock()
	sources := p.st.sources
	p.st.mu.Unlock()
	out := map[string]opa.Grants{}
	unknown := map[string]bool{}
	var errs []error
	for _, gs := range cfg.GrantSources {
		src, ok := sources[gs.Name]
		if !ok {
			unknown[gs.Name] = true
			if req.Outside != nil && req.Outside.Offline() {
				// Offline rendering: shared buckets are not known; say which
				// call was not made.
				if gs.OPA != nil {
					_ = req.Outside.Call(ctx, SystemOPA, func(context.Context) error { return nil })
				}
				continue
			}
			errs = append(errs, fmt.Errorf("grants source %s is not running", gs.Name))
			continue
		}
		st := src.State()
		if !st.Synced {
			unknown[gs.Name] = true
			errs = append(errs, fmt.Errorf("grants source %s has no snapshot yet: %v", gs.Name, st.Err))
			continue
		}
		out[gs.Name] = st.Grants
		// Only the Profiles the kept grants name are affected (and hear when
		// the source recovers); the others have nothing of it to keep.
		if st.Err != nil && len(st.Grants.For(plugins.Namespace(req.Profile))) > 0 {
			errs = append(errs, plugins.Terminal(ReasonGrantsStale, fmt.Errorf("%w; keeping the grants taken at %s, nothing is removed",
				st.Err, st.Taken.UTC().Format(time.RFC3339))))
		}
	}
	return out, unknown, errors.Join(errs...)
}

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

	// Containers first: a volume is written only once its container exists.
	azure := containers{reader: p.reader(req), transport: p.st.transport}
	ready := vols[:0:0]
	failed := map[string]bool{}
	for _, v := range vols {
		if v.Source != "" {
			ready = append(ready, v)
			continue
		}
		want := map[string]string{"account": v.Instance.Account, "endpoint": v.Instance.endpoint(), "container": v.Container}
		called, err := req.Outside.Ensure(ctx, SystemAzureBlob, containerKey(v.Instance.Name), want, func(ctx context.Context) error {
			return azure.ensure(ctx, v.Instance, v.Container)
		})
		if err != nil {
			errs = append(errs, err)
			failed[v.Claim] = true
			continue
		}
		action := plugins.Unchanged
		if called {
			action = plugins.Configured
		}
		res.Add(plugins.Change{Kind: "BlobContainer", Name: v.Instance.Account + "/" + v.Container, Action: action})
		ready = append(ready, v)
	}

	live, err := p.live(ctx, req)
	if err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	ns := plugins.Namespace(req.Profile)
	var desired []runtime.ApplyConfiguration
	var replace []pair
	for _, v := range ready {
		pv, pvc := live.pvs[v.PV], live.pvcs[v.Claim]
		if why := mustReplace(v, pv, pvc); why != "" {
			replace = append(replace, pair{claim: pvc, pv: pv, why: why, name: v.Claim})
			continue
		}
		if terminating(pv) || terminating(pvc) {
			// The old pair is going; the new one follows once it is gone.
			errs = append(errs, fmt.Errorf("volume %s: waiting for the previous PersistentVolume and claim to be deleted", v.Claim))
			continue
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
	for _, name := range sortedKeys(live.pvcs) {
		pvc := live.pvcs[name]
		if keep["pvc/"+name] || unknown[pvc.Labels[LabelSource]] || failed[name] {
			continue
		}
		stale = append(stale, pair{claim: pvc, name: name})
	}
	for _, name := range sortedKeys(live.pvs) {
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

func containerKey(instance string) string { return "container/" + instance }

func (p Plugin) reader(req plugins.Request) client.Reader {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if p.st.reader != nil {
		return p.st.reader
	}
	return req.Client
}

// liveState is the plugin's PersistentVolumes and claims for a Profile.
type liveState struct {
	pvs  map[string]*corev1.PersistentVolume
	pvcs map[string]*corev1.PersistentVolumeClaim
}

func (p Plugin) live(ctx context.Context, req plugins.Request) (liveState, error) {
	st := liveState{pvs: map[string]*corev1.PersistentVolume{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	if req.Outside != nil && req.Outside.Offline() {
		return st, nil
	}
	sel := client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(Kind, req.Profile.Name)}
	var pvs corev1.PersistentVolumeList
	if err := req.Client.List(ctx, &pvs, sel); err != nil {
		return st, fmt.Errorf("list PersistentVolumes: %w", err)
	}
	for i := range pvs.Items {
		st.pvs[pvs.Items[i].Name] = &pvs.Items[i]
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := req.Client.List(ctx, &pvcs, sel, client.InNamespace(plugins.Namespace(req.Profile))); err != nil {
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

// mustReplace says why the live pair cannot be brought to v in place (the
// volume source of a PV and most of a claim's spec are immutable), or "".
func mustReplace(v Volume, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) string {
	var why []string
	if pv != nil && pv.DeletionTimestamp == nil {
		csi := pv.Spec.CSI
		switch {
		case csi == nil || csi.Driver != Driver:
			why = append(why, "the driver")
		case csi.VolumeHandle != v.VolumeHandle():
			why = append(why, "the volume handle")
		case csi.VolumeAttributes["containerName"] != v.Container || csi.VolumeAttributes["storageAccount"] != v.Instance.Account ||
			csi.VolumeAttributes["protocol"] != v.Instance.protocol() || csi.VolumeAttributes["resourceGroup"] != v.Instance.ResourceGroup:
			why = append(why, "the volume attributes")
		case csi.ReadOnly != v.ReadOnly:
			why = append(why, "read-only")
		case csi.NodeStageSecretRef == nil || csi.NodeStageSecretRef.Name != v.Instance.Credentials.SecretName ||
			csi.NodeStageSecretRef.Namespace != v.Instance.Credentials.SecretNamespace:
			why = append(why, "the mount Secret")
		}
	}
	if pvc != nil && pvc.DeletionTimestamp == nil {
		if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{v.AccessMode()}) {
			why = append(why, "the access mode")
		} else if pvc.Spec.VolumeName != v.PV {
			why = append(why, "the bound volume")
		}
	}
	return strings.Join(why, " and ")
}

// pair is a claim and/or a PersistentVolume to delete, with why when it is
// replaced rather than removed.
type pair struct {
	name  string
	claim *corev1.PersistentVolumeClaim
	pv    *corev1.PersistentVolume
	why   string
}

// remove deletes stale and replaced volumes. Claims go first; a
// PersistentVolume goes once its claim is gone. A claim that pods mount is
// deleted all the same (the API server's pvc-protection finalizer keeps it
// until they end) and the pods are named; pods are never touched. When the
// claims to delete now exceed the cluster-wide allowance, none is deleted.
func (p Plugin) remove(ctx context.Context, req plugins.Request, cfg *Config, live liveState, pairs []pair) (plugins.Result, error) {
	var res plugins.Result
	if len(pairs) == 0 {
		return res, nil
	}
	pods, err := p.mounting(ctx, req)
	if err != nil {
		return res, err
	}
	var errs, pending []error
	var act []pair
	for _, pr := range pairs {
		if pr.why != "" && pr.claim != nil && len(pods[pr.claim.Name]) > 0 {
			// Retried with backoff, not terminal: nothing of ours changes
			// when the pods end (pods are not watched), so only a retry
			// notices.
			errs = append(errs, fmt.Errorf("%s: volume %s changes %s; it is replaced when pods %s no longer mount it",
				ReasonVolumeInUse, pr.name, pr.why, strings.Join(pods[pr.claim.Name], ", ")))
			continue
		}
		act = append(act, pr)
	}
	// The allowance counts volumes: claims deleted now, and replaced pairs.
	n := 0
	for _, pr := range act {
		if pr.claim != nil && pr.claim.DeletionTimestamp == nil || pr.claim == nil && pr.why != "" {
			n++
		}
	}
	if n > 0 && !p.allowDeletes(n, cfg) {
		errs = append(errs, plugins.Terminalf(ReasonVolumeDeletesHeld,
			"removing %d volumes would exceed the limit of %d volume deletions per %s across the cluster; nothing was deleted (raise maxVolumeDeletes, or wait)",
			n, cfg.MaxVolumeDeletes, cfg.DeleteWindow.Duration))
		act = nil
	}
	for _, pr := range act {
		if pr.claim != nil {
			if pr.claim.DeletionTimestamp == nil {
				if err := deleteOwned(ctx, req.Client, pr.claim); err != nil {
					errs = append(errs, err)
					continue
				}
				res.Add(plugins.Change{Kind: "PersistentVolumeClaim", Namespace: pr.claim.Namespace, Name: pr.claim.Name, Action: plugins.Deleted})
			}
			if users := pods[pr.claim.Name]; len(users) > 0 {
				pending = append(pending, fmt.Errorf("PersistentVolumeClaim %s is deleted but pods %s still mount it; it goes when they end (pods are never deleted or evicted)",
					pr.claim.Name, strings.Join(users, ", ")))
			}
		}
		pv := pr.pv
		if pv == nil || pv.DeletionTimestamp != nil {
			continue
		}
		if ref := pv.Spec.ClaimRef; pr.why == "" && ref != nil && ref.Namespace == plugins.Namespace(req.Profile) && live.pvcs[ref.Name] != nil {
			// A removed volume's PV waits for its claim to be gone.
			continue
		}
		if err := deleteOwned(ctx, req.Client, pv); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Add(plugins.Change{Kind: "PersistentVolume", Name: pv.Name, Action: plugins.Deleted})
	}
	if len(pending) > 0 {
		errs = append(errs, plugins.Terminal(ReasonVolumeInUse, errors.Join(pending...)))
	}
	return res, errors.Join(errs...)
}

// allowDeletes takes n deletions from the cluster-wide allowance, or none
// when fewer than n are left in the window.
func (p Plugin) allowDeletes(n int, cfg *Config) bool {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	cut := time.Now().Add(-cfg.DeleteWindow.Duration)
	p.st.deletes = slices.DeleteFunc(p.st.deletes, func(t time.Time) bool { return t.Before(cut) })
	if len(p.st.deletes)+n > cfg.MaxVolumeDeletes {
		return false
	}
	for range n {
		p.st.deletes = append(p.st.deletes, time.Now())
	}
	return true
}

// mounting maps claim names to the pods in the Profile's namespace that
// mount them and have not ended, sorted. It reads the namespace's pods
// directly, not through a cache of every pod.
func (p Plugin) mounting(ctx context.Context, req plugins.Request) (map[string][]string, error) {
	var pods corev1.PodList
	if err := p.reader(req).List(ctx, &pods, client.InNamespace(plugins.Namespace(req.Profile))); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := map[string][]string{}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, vol := range pod.Spec.Volumes {
			if c := vol.PersistentVolumeClaim; c != nil {
				out[c.ClaimName] = append(out[c.ClaimName], pod.Name)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out, nil
}

// deleteOwned deletes obj if it carries our labels, with its UID as a
// precondition; gone already is fine.
func deleteOwned(ctx context.Context, c client.Writer, obj client.Object) error {
	l := obj.GetLabels()
	if l[plugins.LabelManagedBy] != plugins.ManagedByValue || l[plugins.LabelPlugin] != Kind {
		return nil
	}
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
	}
	log.FromContext(ctx).V(1).Info("deleted", "object", client.ObjectKeyFromObject(obj))
	return nil
}

// Revoke removes every volume of the Profile under the same rules as
// Apply, and deletes its containers only when retention is Delete.
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	live, err := p.live(ctx, req)
	if err != nil {
		return plugins.Result{}, err
	}
	var pairs []pair
	for _, name := range sortedKeys(live.pvcs) {
		pairs = append(pairs, pair{claim: live.pvcs[name], name: name})
	}
	for _, name := range sortedKeys(live.pvs) {
		pairs = append(pairs, pair{pv: live.pvs[name], name: name})
	}
	res, err := p.remove(ctx, req, cfg, live, pairs)
	if err != nil {
		return res, err
	}
	// Containers are touched only once no volume of the Profile is left,
	// so that no pod ever loses a mounted container.
	if left, err := p.live(ctx, req); err != nil || len(left.pvcs)+len(left.pvs) > 0 {
		return res, errors.Join(err, fmt.Errorf("waiting for %d PersistentVolumeClaims and %d PersistentVolumes to be deleted", len(left.pvcs), len(left.pvs)))
	}
	var errs []error
	keys, err := req.Outside.Recorded(ctx)
	if err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	azure := containers{reader: p.reader(req), transport: p.st.transport}
	ns := plugins.Namespace(req.Profile)
	for _, key := range keys {
		instance, ok := strings.CutPrefix(key, containerKey(""))
		if !ok {
			continue
		}
		in, known := cfg.Instance(instance)
		name := instance
		if known {
			rendered, err := render(cfg.Names.Container, ns, in.Name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			name = ContainerName(rendered)
		}
		if req.Retention != plugins.RetentionDelete || !known {
			// User data stays; the record is dropped so that nothing claims it.
			res.Add(plugins.Change{Kind: "BlobContainer", Name: in.Account + "/" + name, Action: plugins.Unchanged})
			errs = append(errs, req.Outside.Forget(ctx, key))
			continue
		}
		err := req.Outside.Call(ctx, SystemAzureBlob, func(ctx context.Context) error { return azure.remove(ctx, in, name) })
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.Add(plugins.Change{Kind: "BlobContainer", Name: in.Account + "/" + name, Action: plugins.Deleted})
		errs = append(errs, req.Outside.Forget(ctx, key))
	}
	return res, errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
