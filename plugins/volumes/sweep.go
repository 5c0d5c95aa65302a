package volumes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Sweeper deletes volumes that were released longer ago than the config's
// RetainFor. It runs apart from any Profile, since their Profiles are gone.
type Sweeper struct {
	// Client lists volumes, possibly from a cache, and writes them.
	Client client.Client
	// Config holds RetainFor, SweepDryRun, MaxDeletesPerSweep and
	// SweepInterval.
	Config *Config
	// Now returns the time to compare release marks with. Default time.Now.
	Now func() time.Time
	// Reader reads from the API server: the sweep record, and each volume
	// the list found expired, again, right before it is deleted. A cache
	// may not yet show that a returning Profile took a volume back.
	// Default Client.
	Reader client.Reader
	// Namespace is where the sweep record lives unless Config.SweepRecord
	// names one: the host's own namespace. With neither, nothing is
	// deleted.
	Namespace string
	// Wait, when set, is called once before Start's first sweep, and the
	// sweeps begin when it returns nil: hosts pass one that returns once the
	// plugin's first pass over every Profile has ended
	// (reconcilers.FirstPass), so that no sweep decides ahead of a Profile
	// whose owner came back while the host was down. It returns an error
	// only when ctx ends; an error ends Start.
	Wait func(context.Context) error
}

// SweeperFieldManager is the field manager of the sweeper's one write to a
// volume, its reclaim policy set to Delete. It is not the plugin's, so the
// fields the plugin applied (labels, annotations) stay as they are.
const SweeperFieldManager = plugins.FieldManagerPrefix + Kind + "-sweeper"

func (s Sweeper) reader() client.Reader {
	if s.Reader == nil {
		return s.Client
	}
	return s.Reader
}

// record returns the ledger of the sweeper's deletions.
func (s Sweeper) record() (outside.Ledger, error) {
	key := client.ObjectKey{Namespace: cmp.Or(s.Config.SweepRecord.Namespace, s.Namespace), Name: cmp.Or(s.Config.SweepRecord.Name, DefaultSweepRecord)}
	if key.Namespace == "" {
		return outside.Ledger{}, fmt.Errorf("no namespace for the sweep record %s (sweepRecord.namespace, or the host's namespace); nothing is deleted", key.Name)
	}
	return outside.Ledger{Reader: s.reader(), Writer: s.Client, Key: key, Kind: Kind,
		Max: s.Config.MaxDeletesPerSweep, Window: s.Config.SweepInterval.Duration, Now: s.Now}, nil
}

// SweepReport is what one sweep found and did, volumes by name.
type SweepReport struct {
	// Expired are the released volumes older than RetainFor, oldest first:
	// the dry-run report.
	Expired []string
	// Deleted are the volumes this sweep deleted.
	Deleted []string
	// Deferred are expired volumes left for a later sweep by
	// MaxDeletesPerSweep.
	Deferred []string
	// Spared are volumes the list showed expired that, read again from the
	// API server, were not (taken back, changed or gone): left as they are.
	Spared []string
	// Unreserved are released volumes whose reservation for a returning
	// claim outlived every Profile of their owner (an earlier version's
	// Revoke left it): taken back, so that no claim of that name in the
	// next namespace of that name binds them.
	Unreserved []string
	// DryRun says that nothing was deleted because the config asks for a
	// report only.
	DryRun bool
}

// Sweep deletes expired volumes, oldest first, at most MaxDeletesPerSweep
// per SweepInterval as the sweep record counts them (across restarts and
// sweeps), after logging the report of all expired ones. A volume is expired when it
// carries our labels and a release mark older than RetainFor, is Released,
// and is not reserved for a returning Profile's claim. The list may come
// from a cache; each expired volume is read again from the API server and
// deleted only as that copy shows it, still expired (see delete).
func (s Sweeper) Sweep(ctx context.Context) (SweepReport, error) {
	rep := SweepReport{DryRun: s.Config.SweepDryRun}
	if s.Config.RetainFor.Duration <= 0 {
		return rep, nil
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	marked, err := labels.NewRequirement(LabelReleasedAt, selection.Exists, nil)
	if err != nil {
		return rep, err
	}
	sel := plugins.ManagedSelector().Add(*marked)
	var list corev1.PersistentVolumeList
	if err := s.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return rep, fmt.Errorf("list released volumes: %w", err)
	}
	type aged struct {
		pv *corev1.PersistentVolume
		at int64
	}
	var expired []aged
	var reserved []*corev1.PersistentVolume
	cutoff := now.Add(-s.Config.RetainFor.Duration).Unix()
	for i := range list.Items {
		pv := &list.Items[i]
		if at, ok := expiredBy(pv, cutoff); ok {
			expired = append(expired, aged{pv: pv, at: at})
		}
		if ref := pv.Spec.ClaimRef; ref != nil && ref.UID == "" && pv.DeletionTimestamp.IsZero() && pv.Labels[plugins.LabelPlugin] == Kind {
			reserved = append(reserved, pv)
		}
	}
	slices.SortFunc(expired, func(a, b aged) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.pv.Name, b.pv.Name)) })
	for _, e := range expired {
		rep.Expired = append(rep.Expired, e.pv.Name)
	}
	logger := log.FromContext(ctx)
	logger.Info("released volumes past retention", "retainFor", s.Config.RetainFor.Duration, "expired", rep.Expired, "dryRun", rep.DryRun)
	if rep.DryRun {
		return rep, nil
	}
	var errs []error
	if len(expired)+len(reserved) > 0 {
		// An owner whose Profile came back (while the host was down, say)
		// gets the volume from the Profile's pass: the API server, not a
		// cache, says whose Profiles exist now.
		owners, err := s.owners(ctx)
		if err != nil {
			return rep, err
		}
		for _, pv := range reserved {
			if owners[pv.Annotations[AnnotationOwner]] {
				continue
			}
			// The volume's own uid is one no claim has.
			if _, err := unreserve(ctx, s.Client, pv, pv.UID); err != nil {
				errs = append(errs, err)
				continue
			}
			rep.Unreserved = append(rep.Unreserved, pv.Name)
		}
		expired = slices.DeleteFunc(expired, func(e aged) bool {
			back := owners[e.pv.Annotations[AnnotationOwner]]
			if back {
				rep.Spared = append(rep.Spared, e.pv.Name)
				logger.Info("released volume past retention left: its owner has a Profile again", "volume", e.pv.Name)
			}
			return back
		})
	}
	allowed := 0
	if len(expired) > 0 {
		// The cap counts what the record holds, not this process's memory.
		ledger, err := s.record()
		if err != nil {
			return rep, err
		}
		if allowed, err = ledger.TakeUpTo(ctx, min(len(expired), s.Config.MaxDeletesPerSweep)); err != nil {
			return rep, fmt.Errorf("count deletions: %w", err)
		}
	}
	for i, e := range expired {
		if i >= allowed {
			rep.Deferred = append(rep.Deferred, e.pv.Name)
			continue
		}
		deleted, err := s.delete(ctx, e.pv, cutoff)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !deleted {
			rep.Spared = append(rep.Spared, e.pv.Name)
			logger.Info("released volume no longer expired when read again; left", "volume", e.pv.Name)
			continue
		}
		rep.Deleted = append(rep.Deleted, e.pv.Name)
		logger.Info("deleted released volume", "volume", e.pv.Name, "releasedAt", e.pv.Annotations[AnnotationReleasedAt],
			"profile", e.pv.Labels[plugins.LabelProfile], "template", e.pv.Labels[LabelTemplate])
	}
	return rep, errors.Join(errs...)
}

// owners returns the owners of the Profiles the API server holds.
func (s Sweeper) owners(ctx context.Context) (map[string]bool, error) {
	var list kubeflowv1.ProfileList
	if err := s.reader().List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Profiles: %w", err)
	}
	out := make(map[string]bool, len(list.Items))
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() && p.Spec.Owner.Name != "" {
			out[p.Spec.Owner.Name] = true
		}
	}
	return out, nil
}

// expiredBy reports whether pv is a volume of ours, Released, not being
// deleted, not reserved for a returning Profile's claim, and marked released
// at or before cutoff; and when it was marked.
func expiredBy(pv *corev1.PersistentVolume, cutoff int64) (int64, bool) {
	at, err := strconv.ParseInt(pv.Labels[LabelReleasedAt], 10, 64)
	if err != nil || !plugins.ManagedSelector().Matches(labels.Set(pv.Labels)) || pv.Labels[plugins.LabelPlugin] != Kind ||
		pv.Status.Phase != corev1.VolumeReleased || !pv.DeletionTimestamp.IsZero() || at > cutoff {
		return 0, false
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID == "" {
		return 0, false // reserved for a returning Profile's claim
	}
	return at, true
}

// delete deletes the volume listed, if the API server's copy of it is
// still the same volume and still expired, and reports whether it did. Both
// writes carry that copy's resourceVersion as a precondition, so that a
// returning Profile's claim taking the volume back between the read and
// either write fails the write instead of losing the volume: the reclaim
// policy set to Delete (with the sweeper's own field manager, which leaves
// the plugin's fields alone), so that a provisioner also deletes the
// storage behind it, then the delete.
func (s Sweeper) delete(ctx context.Context, listed *corev1.PersistentVolume, cutoff int64) (bool, error) {
	live := &corev1.PersistentVolume{}
	if err := s.reader().Get(ctx, client.ObjectKey{Name: listed.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read released volume %s: %w", listed.Name, err)
	}
	if _, ok := expiredBy(live, cutoff); !ok || live.UID != listed.UID {
		return false, nil
	}
	if live.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		read := live.DeepCopy()
		live.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		patch := client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{})
		if err := s.Client.Patch(ctx, live, patch, client.FieldOwner(SweeperFieldManager)); err != nil {
			return false, fmt.Errorf("set reclaim policy Delete on released volume %s: %w", live.Name, err)
		}
	}
	uid, version := live.UID, live.ResourceVersion
	if err := s.Client.Delete(ctx, live, client.Preconditions{UID: &uid, ResourceVersion: &version}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete released volume %s: %w", live.Name, err)
	}
	return true, nil
}

// Start sweeps every SweepInterval until ctx ends, so that a Sweeper runs
// as a manager's Runnable. A failed sweep is logged and tried again at the
// next interval.
func (s Sweeper) Start(ctx context.Context) error {
	if s.Config.RetainFor.Duration <= 0 {
		return nil
	}
	if s.Wait != nil {
		if err := s.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sweeper: wait for the first pass: %w", err)
		}
	}
	t := time.NewTicker(s.Config.SweepInterval.Duration)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil {
			log.FromContext(ctx).Error(err, "sweep released volumes")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection makes only the leader sweep.
func (Sweeper) NeedLeaderElection() bool { return true }
