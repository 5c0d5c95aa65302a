package volumes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// ReasonExpansionNotAllowed is the condition's reason when a Profile asks for
// a larger volume than its StorageClass can grow to.
const ReasonExpansionNotAllowed = "ExpansionNotAllowed"

// Plugin gives each Profile its volumes and keeps them past the Profile.
type Plugin struct {
	// Now returns the time that marks released volumes. Default time.Now.
	Now func() time.Time
}

var _ plugins.Plugin = Plugin{}

var claimGVK = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")

// Definition returns the volumes plugin. It owns claims in the Profile's
// namespace, keeps state outside it (the cluster-scoped volumes, so a
// finalizer lets it mark them released), and watches every volume and
// StorageClass: a volume binding to one of its claims wakes the Profile.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:       Plugin{},
		NewConfig:    func() any { return NewConfig() },
		Owns:         []schema.GroupVersionKind{claimGVK},
		Reads:        []schema.GroupVersionKind{claimGVK},
		OutsideState: true,
		Watches: []plugins.Watch{
			{Object: &corev1.PersistentVolume{}, Profiles: volumeProfiles},
			{Object: &storagev1.StorageClass{}, Profiles: func(context.Context, client.Object) []string { return nil }},
		},
	}
}

// volumeProfiles maps a volume to the Profile it is labelled for and to the
// Profile whose namespace holds its claim.
func volumeProfiles(_ context.Context, o client.Object) []string {
	pv, ok := o.(*corev1.PersistentVolume)
	if !ok {
		return nil
	}
	var names []string
	if l := pv.Labels; l[plugins.LabelManagedBy] == plugins.ManagedByValue && l[plugins.LabelPlugin] == Kind && l[plugins.LabelProfile] != "" {
		names = append(names, l[plugins.LabelProfile])
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace != "" && !slices.Contains(names, ref.Namespace) {
		names = append(names, ref.Namespace)
	}
	return names
}

// Kind returns "volumes".
func (Plugin) Kind() string { return Kind }

func (p Plugin) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// bound is a claim of ours and the volume it is bound to.
type bound struct {
	pv *corev1.PersistentVolume
	t  Template
	sc *storagev1.StorageClass
}

// Apply writes the Profile's claims, binding each to the volume retained for
// it when there is one, and marks the volumes bound to them as the
// Profile's, with the reclaim policy the retention asks for.
func (p Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	prof := req.Profile
	ns := plugins.Namespace(prof)
	offline := req.Outside != nil && req.Outside.Offline()
	r := req.WatchedReader()

	var pvs []corev1.PersistentVolume
	claims := map[string]*corev1.PersistentVolumeClaim{}
	if !offline {
		var list corev1.PersistentVolumeList
		if err := r.List(ctx, &list); err != nil {
			return plugins.Result{}, fmt.Errorf("list persistent volumes: %w", err)
		}
		pvs = list.Items
		var cl corev1.PersistentVolumeClaimList
		if err := req.Client.List(ctx, &cl, client.InNamespace(ns),
			client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(Kind, prof.Name)}); err != nil {
			return plugins.Result{}, fmt.Errorf("list claims: %w", err)
		}
		for i := range cl.Items {
			// A claim of an earlier Profile of the same name, which a cache
			// may still hold, says nothing about this one's volumes.
			if ownedByUID(&cl.Items[i], prof.UID) {
				claims[cl.Items[i].Name] = &cl.Items[i]
			}
		}
	}

	var res plugins.Result
	var errs []error
	var desired []runtime.ApplyConfiguration
	var wanted []string // the claims' names
	var keep []*corev1.PersistentVolume
	var bounds []bound
	for _, v := range cfg.Volumes {
		t, _ := cfg.Template(v.Template) // Validate checked it
		var sc *storagev1.StorageClass
		if !offline {
			if sc, err = storageClass(ctx, r, t.StorageClassName); err != nil {
				errs = append(errs, err)
			}
		}
		live := claims[t.ClaimName]
		var liveSize *resource.Quantity
		if live != nil {
			if q, ok := live.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				liveSize = &q
			}
		}
		size, msg := ClaimSize(t, v, liveSize, sc)
		if msg != "" {
			errs = append(errs, plugins.Terminal(ReasonExpansionNotAllowed, errors.New(msg)))
		}
		volumeName := ""
		switch {
		case live != nil && live.Spec.VolumeName != "" && !takenBack(find(pvs, live.Spec.VolumeName), live, prof):
			volumeName = live.Spec.VolumeName
			pv := find(pvs, volumeName)
			if pv == nil || pv.Spec.ClaimRef == nil {
				break
			}
			if ref := pv.Spec.ClaimRef; ref.UID == "" && ref.Namespace == ns && ref.Name == live.Name {
				// Reserved for the claim, which binds it in a moment; until
				// then the volume may still show Released: never take the
				// reservation back.
				keep = append(keep, pv)
				break
			}
			if pv.Spec.ClaimRef.UID != live.UID {
				break
			}
			keep = append(keep, pv)
			if o, ok := pv.Labels[LabelOwner]; ok && o != OwnerHash(prof.Spec.Owner.Name) {
				// Never relabel a volume retained for someone else.
				errs = append(errs, plugins.Terminalf(plugins.ReasonConflict, "claim %s/%s is bound to volume %s, which is labelled for another owner; left as it is", ns, live.Name, pv.Name))
				break
			}
			bounds = append(bounds, bound{pv: pv, t: t, sc: sc})
		default:
			seek := Seeker{Profile: prof.Name, Owner: prof.Spec.Owner.Name, Match: cfg.Match, Template: t.Name}
			pv := seek.Retained(pvs, ns, t.ClaimName)
			if pv == nil {
				break
			}
			keep = append(keep, pv)
			uid, err := p.claimUID(ctx, req, live, pv, t.ClaimName)
			if err != nil {
				// The claim may exist and be bound: leave it as it is, never
				// prune it for a read that failed.
				errs = append(errs, err)
				req.Objects.Keep(claimGVK, ns, t.ClaimName)
				continue
			}
			state := State(Kind, prof, t, Reclaim(req.Retention, sc), time.Time{})
			changes, err := reserve(ctx, req.Client, pv, state, ns, t.ClaimName, uid)
			res.Merge(changes)
			if err != nil {
				errs = append(errs, err)
				req.Objects.Keep(claimGVK, ns, t.ClaimName)
				continue
			}
			volumeName = pv.Name
		}
		desired = append(desired, Claim(prof, t, size, volumeName))
		wanted = append(wanted, t.ClaimName)
	}

	// A claim the Profile lets go may be bound to a volume no pass has
	// marked yet (it bound just before the Profile changed): marked first,
	// it keeps its data under a StorageClass that deletes; until then the
	// claim stays.
	for name, c := range claims {
		if slices.Contains(wanted, name) {
			continue
		}
		changed, err := p.markBeforeLetGo(ctx, req, cfg, c, pvs, time.Time{})
		res.Merge(changed)
		if err != nil {
			errs = append(errs, err)
			req.Objects.Keep(claimGVK, ns, name)
		}
	}

	synced, err := req.Objects.Sync(ctx, desired...)
	res.Merge(synced)
	if err != nil {
		errs = append(errs, err)
	}

	for _, b := range bounds {
		state := State(Kind, prof, b.t, Reclaim(req.Retention, b.sc), time.Time{})
		c, err := applyState(ctx, req.Client, b.pv, state)
		res.Merge(c)
		errs = append(errs, err)
	}
	// Volumes of this Profile whose claim it no longer wants are let go.
	for i := range pvs {
		pv := &pvs[i]
		if !ofProfile(pv, prof) || slices.Contains(keep, pv) || pv.Status.Phase != corev1.VolumeReleased {
			continue
		}
		c, err := p.release(ctx, req, cfg, pv)
		res.Merge(c)
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// Revoke marks the Profile's volumes released, with the reclaim policy the
// retention asks for, and deletes its claims: the volumes stay (Released)
// unless retention is Delete.
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	var res plugins.Result
	var errs []error
	if req.Outside == nil || !req.Outside.Offline() {
		var list corev1.PersistentVolumeList
		if err := req.WatchedReader().List(ctx, &list); err != nil {
			return plugins.Result{}, fmt.Errorf("list persistent volumes: %w", err)
		}
		for i := range list.Items {
			pv := &list.Items[i]
			if !ofProfile(pv, req.Profile) {
				continue
			}
			c, err := p.release(ctx, req, cfg, pv)
			res.Merge(c)
			errs = append(errs, err)
		}
		// A volume bound to a claim of the Profile that no pass has marked
		// yet is marked released before its claim goes, or no claim goes.
		var claims corev1.PersistentVolumeClaimList
		if err := req.Client.List(ctx, &claims, client.InNamespace(plugins.Namespace(req.Profile)),
			client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(Kind, req.Profile.Name)}); err != nil {
			return res, errors.Join(append(errs, fmt.Errorf("list claims: %w", err))...)
		}
		for i := range claims.Items {
			if !ownedByUID(&claims.Items[i], req.Profile.UID) {
				continue
			}
			c, err := p.markBeforeLetGo(ctx, req, cfg, &claims.Items[i], list.Items, p.now())
			res.Merge(c)
			if err != nil {
				return res, errors.Join(append(errs, err)...)
			}
		}
	}
	deleted, err := req.Objects.DeleteAll(ctx)
	res.Merge(deleted)
	errs = append(errs, err)
	return res, errors.Join(errs...)
}

// release marks pv as let go by the Profile, keeping the first mark.
func (p Plugin) release(ctx context.Context, req plugins.Request, cfg *Config, pv *corev1.PersistentVolume) (plugins.Result, error) {
	t, ok := cfg.Template(pv.Labels[LabelTemplate])
	if !ok {
		// A template the host no longer offers: keep what the volume says.
		t = Template{Name: pv.Labels[LabelTemplate], StorageClassName: pv.Spec.StorageClassName}
	}
	sc, err := storageClass(ctx, req.WatchedReader(), pv.Spec.StorageClassName)
	if err != nil {
		return plugins.Result{}, err
	}
	var res plugins.Result
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID == "" && ref.Namespace == plugins.Namespace(req.Profile) {
		changed, err := unreserve(ctx, req.Client, pv, req.Profile.UID)
		res.Merge(changed)
		if err != nil {
			return res, err
		}
	}
	state := State(Kind, req.Profile, t, Reclaim(req.Retention, sc), time.Time{}).Released(pv, p.now())
	marked, err := applyState(ctx, req.Client, pv, state)
	res.Merge(marked)
	return res, err
}

// markBeforeLetGo gives the volume bound to claim c, a claim of the
// Profile about to be deleted, the Profile's marks and the reclaim policy
// the retention asks for, when no pass has marked it yet: a volume that
// bound a moment before its Profile let it go keeps its data. released,
// when not zero, marks it released then (a Revoke). A volume marked for
// anyone already, or not bound to c, is left as it is.
func (p Plugin) markBeforeLetGo(ctx context.Context, req plugins.Request, cfg *Config, c *corev1.PersistentVolumeClaim, pvs []corev1.PersistentVolume, released time.Time) (plugins.Result, error) {
	pv := find(pvs, c.Spec.VolumeName)
	if c.Spec.VolumeName == "" || pv == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID {
		return plugins.Result{}, nil
	}
	if _, marked := pv.Labels[LabelOwner]; marked {
		return plugins.Result{}, nil
	}
	t, ok := cfg.Template(c.Labels[LabelTemplate])
	if !ok {
		t = Template{Name: c.Labels[LabelTemplate], StorageClassName: pv.Spec.StorageClassName}
	}
	sc, err := storageClass(ctx, req.WatchedReader(), pv.Spec.StorageClassName)
	if err != nil {
		return plugins.Result{}, err
	}
	state := State(Kind, req.Profile, t, Reclaim(req.Retention, sc), released)
	return applyState(ctx, req.Client, pv, state)
}

// takenBack reports whether pv, the volume that the claim live names, is
// one that a Revoke of this Profile took back from the claim before it
// bound (its claimRef names the claim with the Profile's uid, see
// unreserve), the host having stopped before it deleted the claim. The
// claim then waits for a volume reserved for another: a Profile that lists
// the plugin again must reserve the volume anew.
func takenBack(pv *corev1.PersistentVolume, live *corev1.PersistentVolumeClaim, p *kubeflowv1.Profile) bool {
	if pv == nil || pv.Spec.ClaimRef == nil {
		return false
	}
	ref := pv.Spec.ClaimRef
	return ref.UID == p.UID && ref.Namespace == live.Namespace && ref.Name == live.Name
}

// ownedByUID reports whether o has an owner reference to the Profile with uid.
func ownedByUID(o client.Object, uid types.UID) bool {
	return slices.ContainsFunc(o.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// ofProfile reports whether pv is labelled for Profile p and its owner: a
// Profile of the same name and another owner has no claim on it.
func ofProfile(pv *corev1.PersistentVolume, p *kubeflowv1.Profile) bool {
	owner := p.Spec.Owner.Name
	return plugins.IsOwnedBy(pv.Labels, Kind, p.Name) &&
		pv.Labels[LabelOwner] == OwnerHash(owner) && pv.Annotations[AnnotationOwner] == owner
}

// applyState makes state true on pv, sending nothing when it already holds.
func applyState(ctx context.Context, w client.Writer, pv *corev1.PersistentVolume, state VolumeState) (plugins.Result, error) {
	var res plugins.Result
	if state.Holds(pv) {
		return res, nil
	}
	if err := apply.Fields(ctx, w, Kind, pv.UID, state.Apply(pv.Name)); err != nil {
		return res, err
	}
	res.Add(plugins.Change{Kind: "PersistentVolume", Name: pv.Name, Action: plugins.Configured})
	return res, nil
}

func find(pvs []corev1.PersistentVolume, name string) *corev1.PersistentVolume {
	for i := range pvs {
		if pvs[i].Name == name {
			return &pvs[i]
		}
	}
	return nil
}

// storageClass reads the named StorageClass, or the cluster's default when
// name is empty. It returns nil, without error, when there is none: the
// claim then waits, as it would without us.
func storageClass(ctx context.Context, r client.Reader, name string) (*storagev1.StorageClass, error) {
	if name != "" {
		var sc storagev1.StorageClass
		err := r.Get(ctx, client.ObjectKey{Name: name}, &sc)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read StorageClass %s: %w", name, err)
		}
		return &sc, nil
	}
	var list storagev1.StorageClassList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list StorageClasses: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}
