package blobcsi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// mustReplace says why the live pair cannot be brought to v in place (the
// volume source of a PV and most of a claim's spec are immutable), or "".
func mustReplace(cfg *Config, v Volume, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) string {
	var why []string
	mount, _ := cfg.MountFor(v)
	if pv != nil && pv.DeletionTimestamp == nil {
		csi := pv.Spec.CSI
		switch {
		case csi == nil || csi.Driver != Driver:
			why = append(why, "the driver")
		case csi.VolumeHandle != v.VolumeHandle():
			why = append(why, "the volume handle")
		case csi.VolumeAttributes["containerName"] != v.Container || csi.VolumeAttributes["storageAccount"] != v.Instance.Account ||
			csi.VolumeAttributes["protocol"] != v.Instance.protocol() || csi.VolumeAttributes["resourceGroup"] != v.Instance.ResourceGroup ||
			!sameMountAttributes(csi.VolumeAttributes, mount.attributes()):
			why = append(why, "the volume attributes")
		case csi.ReadOnly != v.ReadOnly:
			why = append(why, "read-only")
		case csi.NodeStageSecretRef == nil || csi.NodeStageSecretRef.Name != mount.Secret.Name ||
			csi.NodeStageSecretRef.Namespace != mount.Secret.Namespace:
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

// sameMountAttributes says whether the live attributes hold exactly the
// wanted service principal attributes (none for an account key).
func sameMountAttributes(live, want map[string]string) bool {
	for _, k := range []string{AttrAuthType, AttrSPNClientID, AttrSPNTenantID, AttrAADEndpoint} {
		if live[k] != want[k] {
			return false
		}
	}
	return true
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
	ns := plugins.Namespace(req.Profile)
	for _, pr := range pairs {
		if users := mountersOf(pods, ns, pr); pr.why != "" && len(users) > 0 {
			// Retried with backoff, not terminal: nothing of ours changes
			// when the pods end (pods are not watched), so only a retry
			// notices.
			errs = append(errs, inUseError{fmt.Errorf("volume %s changes %s; it is replaced when pods %s no longer mount it",
				pr.name, pr.why, strings.Join(users, ", "))})
			continue
		}
		act = append(act, pr)
	}
	if act, err = p.confirmClaims(ctx, req, live, act); err != nil {
		return res, err
	}
	// The allowance counts volumes: claims deleted now, and replaced pairs.
	n := 0
	for _, pr := range act {
		if pr.claim != nil && pr.claim.DeletionTimestamp == nil || pr.claim == nil && pr.why != "" {
			n++
		}
	}
	if n > 0 {
		ok, err := p.deletes(req, cfg).TakeAll(ctx, n)
		switch {
		case err != nil:
			errs = append(errs, err)
			act = nil
		case !ok:
			errs = append(errs, plugins.Terminalf(ReasonVolumeDeletesHeld,
				"removing %d volumes would exceed the limit of %d volume deletions per %s across the cluster; nothing was deleted (raise maxVolumeDeletes, or wait)",
				n, cfg.MaxVolumeDeletes, cfg.DeleteWindow.Duration))
			act = nil
		}
	}
	for _, pr := range act {
		if pr.claim != nil {
			if pr.claim.DeletionTimestamp == nil {
				if err := deleteOwned(ctx, req.Client, req.LiveReader(), pr.claim); err != nil {
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
		if ref := pv.Spec.ClaimRef; pr.why == "" && ref != nil && ref.Namespace == ns && live.pvcs[ref.Name] != nil {
			// A removed volume's PV waits for its claim to be gone.
			continue
		}
		if err := deleteOwned(ctx, req.Client, req.LiveReader(), pv); err != nil {
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

// mountersOf returns the pods that mount the pair's claim or the claim in
// namespace ns that its volume is bound to. The volume's binding counts
// as well as the claim the cache shows, so that a claim the cache has not
// seen yet does not let its volume be replaced under the pods using it.
func mountersOf(pods map[string][]string, ns string, pr pair) []string {
	var users []string
	if pr.claim != nil {
		users = append(users, pods[pr.claim.Name]...)
	}
	if pr.pv != nil {
		if ref := pr.pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns && (pr.claim == nil || ref.Name != pr.claim.Name) {
			users = append(users, pods[ref.Name]...)
		}
	}
	slices.Sort(users)
	return slices.Compact(users)
}

// deletes returns the cluster-wide ledger of volume deletions: a ConfigMap
// the plugin owns, read from the API server, so that the cap holds across
// restarts and across hosts that share one cluster. A ConfigMap of its name
// that is not the plugin's holds every deletion.
func (p Plugin) deletes(req plugins.Request, cfg *Config) outside.Ledger {
	ref := cfg.deleteRecord()
	return outside.Ledger{Reader: req.LiveReader(), Writer: req.Client, Key: client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name},
		Kind: Kind, Max: cfg.MaxVolumeDeletes, Window: cfg.DeleteWindow.Duration}
}

// mounting maps claim names to the pods in the Profile's namespace that
// mount them and have not ended, sorted. It reads the namespace's pods
// directly, not through a cache of every pod.
func (p Plugin) mounting(ctx context.Context, req plugins.Request) (map[string][]string, error) {
	var pods corev1.PodList
	if err := req.LiveReader().List(ctx, &pods, client.InNamespace(plugins.Namespace(req.Profile))); err != nil {
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

// deleteOwned deletes obj, as read, while it is still that object and
// carries our labels: the delete carries its uid and resourceVersion. When
// it changed since (a cache behind, a status update), it is read again
// through r and deleted at its new version only if it still carries our
// labels; one that someone took over (relabelled) or made again meanwhile
// is left. Gone already is fine.
func deleteOwned(ctx context.Context, c client.Writer, r client.Reader, obj client.Object) error {
	uid := obj.GetUID()
	for range 3 {
		l := obj.GetLabels()
		if l[plugins.LabelManagedBy] != plugins.ManagedByValue || l[plugins.LabelPlugin] != Kind ||
			obj.GetUID() != uid || obj.GetDeletionTimestamp() != nil {
			return nil
		}
		pre := client.Preconditions{UID: &uid}
		if version := obj.GetResourceVersion(); version != "" {
			pre.ResourceVersion = &version
		}
		err := c.Delete(ctx, obj, pre)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			log.FromContext(ctx).V(1).Info("deleted", "object", client.ObjectKeyFromObject(obj))
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
		}
		now, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
		}
		if err := r.Get(ctx, client.ObjectKeyFromObject(obj), now); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read %T %s again: %w", obj, obj.GetName(), err)
		}
		obj = now
	}
	return fmt.Errorf("%T %s kept changing while it was being deleted; will try again", obj, obj.GetName())
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
	ns := plugins.Namespace(req.Profile)
	var pairs []pair
	named, err := p.claimsNamed(ctx, req, live, func(string) bool { return true })
	if err != nil {
		return plugins.Result{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(live.pvcs)) {
		if named[name] {
			pairs = append(pairs, pair{claim: live.pvcs[name], name: name})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(live.pvs)) {
		pairs = append(pairs, pair{pv: live.pvs[name], name: name})
	}
	res, err := p.remove(ctx, req, cfg, live, pairs)
	if err != nil {
		return res, err
	}
	// Containers are touched only once no volume of the Profile is left,
	// so that no pod ever loses a mounted container. The API server says
	// so, not a cache, which may not yet show a volume made a moment ago.
	// A claim no volume of ours names is the tenant's, whatever its labels.
	left, err := p.liveFrom(ctx, req, req.LiveReader())
	claimsLeft := 0
	for name := range left.claimsNamed(ns) {
		if left.pvcs[name] != nil {
			claimsLeft++
		}
	}
	if err != nil || claimsLeft+len(left.pvs) > 0 {
		return res, errors.Join(err, fmt.Errorf("waiting for %d PersistentVolumeClaims and %d PersistentVolumes to be deleted", claimsLeft, len(left.pvs)))
	}
	azure := containers{reader: req.LiveReader(), transport: p.st.transport, principals: cfg.Principals, tokens: &p.st.tokens}
	want := proofFor(req)
	// A legacy key proves a container without proof ours only when the host
	// made it, not when it was moved from a record the tenant could write.
	made, err := req.Outside.Made(ctx)
	if err != nil {
		return res, err
	}
	err = req.Outside.Sweep(ctx, func(key string) (string, bool) {
		_, _, ok := parseContainerKey(key)
		return key, ok
	}, func(ctx context.Context, key string, _ []string) error {
		instance, legacy, _ := parseContainerKey(key)
		legacy = legacy && slices.Contains(made, key)
		in, known := cfg.Instance(instance)
		name := instance
		if known {
			rendered, err := render(cfg.Names.Container, ns, in.Name)
			if err != nil {
				return err
			}
			name = ContainerName(rendered)
		}
		if req.Retention != plugins.RetentionDelete || !known {
			// User data stays; the record is dropped so that nothing claims it.
			res.Add(plugins.Change{Kind: "BlobContainer", Name: in.Account + "/" + name, Action: plugins.Unchanged})
			return nil
		}
		var done removed
		err := req.Outside.Call(ctx, SystemAzureBlob, func(ctx context.Context) error {
			var err error
			done, err = azure.remove(ctx, in, name, want, legacy)
			return err
		})
		if err != nil {
			return err
		}
		action := plugins.Deleted
		if done == removedNotOurs {
			// Not our proof (replaced by someone else since): never deleted.
			action = plugins.Skipped
			log.FromContext(ctx).Info("container kept: it does not carry the proof that profilekit made it for this Profile",
				"account", in.Account, "container", name)
		}
		res.Add(plugins.Change{Kind: "BlobContainer", Name: in.Account + "/" + name, Action: action})
		return nil
	})
	return res, err
}

// parseContainerKey returns the instance of a container key of the record,
// and whether it is the key of a version that wrote no proof.
func parseContainerKey(key string) (instance string, legacy, ok bool) {
	if instance, ok := strings.CutPrefix(key, legacyContainerKey("")); ok {
		return instance, true, true
	}
	instance, ok = strings.CutPrefix(key, containerKey(""))
	return instance, false, ok
}

// inUseError is a volume that waits for the pods that mount it: retried
// with backoff, and reported with the reason VolumeInUse, which the host
// puts ahead of the message.
type inUseError struct{ error }

func (inUseError) Reason() string { return ReasonVolumeInUse }

func (e inUseError) Unwrap() error { return e.error }
