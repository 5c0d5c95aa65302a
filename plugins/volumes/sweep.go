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
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// Sweeper deletes volumes that were released longer ago than the config's
// RetainFor. It runs apart from any Profile, since their Profiles are gone.
type Sweeper struct {
	// Client lists volumes (through the API server, not a cache restricted
	// to our labels, which holds them anyway) and deletes them.
	Client client.Client
	// Config holds RetainFor, SweepDryRun, MaxDeletesPerSweep and
	// SweepInterval.
	Config *Config
	// Now returns the time to compare release marks with. Default time.Now.
	Now func() time.Time
	// Reader reads the sweep record from the API server. Default Client.
	Reader client.Reader
	// Namespace is where the sweep record lives unless Config.SweepRecord
	// names one: the host's own namespace. With neither, nothing is
	// deleted.
	Namespace string
}

// record returns the ledger of the sweeper's deletions.
func (s Sweeper) record() (plugins.Ledger, error) {
	key := client.ObjectKey{Namespace: cmp.Or(s.Config.SweepRecord.Namespace, s.Namespace), Name: cmp.Or(s.Config.SweepRecord.Name, DefaultSweepRecord)}
	if key.Namespace == "" {
		return plugins.Ledger{}, fmt.Errorf("no namespace for the sweep record %s (sweepRecord.namespace, or the host's namespace); nothing is deleted", key.Name)
	}
	reader := s.Reader
	if reader == nil {
		reader = s.Client
	}
	return plugins.Ledger{Reader: reader, Writer: s.Client, Key: key, Kind: Kind,
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
	// DryRun says that nothing was deleted because the config asks for a
	// report only.
	DryRun bool
}

// Sweep deletes expired volumes, oldest first, at most MaxDeletesPerSweep
// per SweepInterval as the sweep record counts them (across restarts and
// sweeps), after logging the report of all expired ones. A volume is expired when it
// carries our labels and a release mark older than RetainFor, is Released,
// and is not reserved for a returning Profile's claim. It first gets the
// reclaim policy Delete, so that a provisioner also deletes the storage
// behind it, then is deleted, with its uid as a precondition.
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
	cutoff := now.Add(-s.Config.RetainFor.Duration).Unix()
	for i := range list.Items {
		pv := &list.Items[i]
		at, err := strconv.ParseInt(pv.Labels[LabelReleasedAt], 10, 64)
		if err != nil || pv.Labels[plugins.LabelPlugin] != Kind || pv.Status.Phase != corev1.VolumeReleased ||
			!pv.DeletionTimestamp.IsZero() || at > cutoff {
			continue
		}
		if ref := pv.Spec.ClaimRef; ref != nil && ref.UID == "" {
			continue // reserved for a returning Profile's claim
		}
		expired = append(expired, aged{pv: pv, at: at})
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
	var errs []error
	for i, e := range expired {
		if i >= allowed {
			rep.Deferred = append(rep.Deferred, e.pv.Name)
			continue
		}
		if err := s.delete(ctx, e.pv); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Deleted = append(rep.Deleted, e.pv.Name)
		logger.Info("deleted released volume", "volume", e.pv.Name, "releasedAt", e.pv.Annotations[AnnotationReleasedAt],
			"profile", e.pv.Labels[plugins.LabelProfile], "template", e.pv.Labels[LabelTemplate])
	}
	return rep, errors.Join(errs...)
}

func (s Sweeper) delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		ac := corev1ac.PersistentVolume(pv.Name).WithSpec(corev1ac.PersistentVolumeSpec().
			WithPersistentVolumeReclaimPolicy(corev1.PersistentVolumeReclaimDelete))
		if err := plugins.ApplyFields(ctx, s.Client, Kind, pv.UID, ac); err != nil {
			return err
		}
	}
	uid := pv.UID
	if err := s.Client.Delete(ctx, pv, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete released volume %s: %w", pv.Name, err)
	}
	return nil
}

// Start sweeps every SweepInterval until ctx ends, so that a Sweeper runs
// as a manager's Runnable. A failed sweep is logged and tried again at the
// next interval.
func (s Sweeper) Start(ctx context.Context) error {
	if s.Config.RetainFor.Duration <= 0 {
		return nil
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
