package outside

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// RecordsMigratedName names the ConfigMap, in the records' namespace, whose
// presence says that MigrateRecords has moved every record: from then on no
// copy in a Profile's namespace is read again.
const RecordsMigratedName = "profilekit-records-migrated"

// RoleMigrated is the LabelRole value of the RecordsMigratedName ConfigMap.
const RoleMigrated = "records-migrated"

// MigrateRecords moves the outside-state records that earlier versions kept
// in each Profile's own namespace (StateName) into namespace (the host's;
// DefaultRecordsNamespace when empty), keyed by the Profile's UID, and
// deletes the copies. It runs once: when it has moved everything it writes
// RecordsMigratedName, and a later call reads nothing else. It returns how
// many records it moved.
//
// Those copies lived where the tenant could write them, so nothing in them
// is taken as proof. Each key moves as intended but not made (see
// Outside.Intend): a piece the Profile still names is made true again by its
// next pass (one outside call, which is idempotent), a piece it no longer
// names is removed in profilekit's own form (a Sweep), and no plugin takes
// a moved key as proof that it made something (Outside.Made leaves it out).
// A key the host's record already holds is kept as the host wrote it.
//
// r must read from the API server (the cache is not started before the
// host is); w writes.
func MigrateRecords(ctx context.Context, r client.Reader, w client.Writer, namespace string) (int, error) {
	if namespace == "" {
		namespace = DefaultRecordsNamespace
	}
	var done corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: RecordsMigratedName}, &done)
	switch {
	case err == nil:
		return 0, nil
	case !apierrors.IsNotFound(err):
		return 0, fmt.Errorf("read %s/%s: %w", namespace, RecordsMigratedName, err)
	}
	var list corev1.ConfigMapList
	if err := r.List(ctx, &list, client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: plugins.RoleOutsideState}); err != nil {
		return 0, fmt.Errorf("list outside-state records: %w", err)
	}
	moved := 0
	var errs []error
	for i := range list.Items {
		cm := &list.Items[i]
		kind := cm.Labels[plugins.LabelPlugin]
		if cm.Namespace == namespace || kind == "" || cm.Name != StateName(kind) {
			continue
		}
		ok, err := migrateRecord(ctx, r, w, namespace, cm)
		if err != nil {
			errs = append(errs, fmt.Errorf("record %s/%s: %w", cm.Namespace, cm.Name, err))
		}
		if ok {
			moved++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return moved, err
	}
	done = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RecordsMigratedName,
		Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: RoleMigrated}}}
	if err := w.Create(ctx, &done); err != nil && !apierrors.IsAlreadyExists(err) {
		return moved, fmt.Errorf("write %s/%s: %w", namespace, RecordsMigratedName, err)
	}
	return moved, nil
}

// migrateRecord moves one copy, found in a Profile's namespace, into the
// host's record of its Profile, and deletes it. A copy whose Profile is gone
// or does not own that namespace is deleted, not moved.
func migrateRecord(ctx context.Context, r client.Reader, w client.Writer, namespace string, cm *corev1.ConfigMap) (bool, error) {
	kind := cm.Labels[plugins.LabelPlugin]
	var p kubeflowv1.Profile
	err := r.Get(ctx, client.ObjectKey{Name: cm.Labels[plugins.LabelProfile]}, &p)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read its Profile: %w", err)
	}
	moved := false
	if err == nil && plugins.Namespace(&p) == cm.Namespace && p.UID != "" {
		keys := map[string]outsideEntry{}
		if json.Unmarshal([]byte(cm.Data[recordKey]), &keys) != nil {
			keys = map[string]outsideEntry{}
		}
		o := &Outside{kind: kind, profile: &p, reader: r, writer: w, opts: Options{Namespace: namespace}, now: time.Now}
		if err := o.load(ctx, false); err != nil {
			return false, err
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if _, held := o.entries[k]; !held {
				o.entries[k] = outsideEntry{}
				o.dirty = true
			}
		}
		if err := o.Flush(ctx); err != nil {
			return false, err
		}
		moved = true
	}
	uid := cm.UID
	if err := w.Delete(ctx, cm, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return moved, fmt.Errorf("delete the copy: %w", err)
	}
	return moved, nil
}
