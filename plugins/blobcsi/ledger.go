package blobcsi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// RoleDeleteRecord is the plugins.LabelRole value of the deletion record.
const RoleDeleteRecord = "delete-record"

// deleteRecordKey is the record's data key: a JSON list of the times of the
// volume deletions within the window.
const deleteRecordKey = "deletes.json"

// deleteRecord is the cluster-wide count of recent volume deletions: a
// ConfigMap the plugin owns, read from the API server and patched with its
// resourceVersion as a precondition, so that the cap holds across restarts
// and across hosts that share one cluster. It needs get, create and patch
// on ConfigMaps in its namespace.
type deleteRecord struct {
	reader client.Reader
	writer client.Writer
	key    client.ObjectKey
	max    int
	window time.Duration
	now    func() time.Time
}

// take records n deletions now when the window leaves room for them and
// reports whether it did. A record that exists without the plugin's labels
// is a Conflict: nothing is counted, so nothing may be deleted.
func (r deleteRecord) take(ctx context.Context, n int) (bool, error) {
	allowed := false
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		var cm corev1.ConfigMap
		err := r.reader.Get(ctx, r.key, &cm)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("read the volume deletion record %s: %w", r.key, err)
		}
		if exists && (cm.Labels[plugins.LabelManagedBy] != plugins.ManagedByValue || cm.Labels[plugins.LabelPlugin] != Kind) {
			return plugins.Terminalf(plugins.ReasonConflict,
				"ConfigMap %s exists and is not plugin %s's volume deletion record; left untouched, and no volume is deleted until it is renamed or removed (deleteRecord in the host's config)", r.key, Kind)
		}
		now := r.now()
		times, err := recentDeletes(cm.Data[deleteRecordKey], now.Add(-r.window))
		if err != nil {
			// The cap errs on the side of deleting nothing.
			return plugins.Terminalf(ReasonVolumeDeletesHeld, "the volume deletion record %s does not decode (%v); no volume is deleted until it is removed", r.key, err)
		}
		if len(times)+n > r.max {
			allowed = false
			return nil
		}
		for range n {
			times = append(times, now.UTC())
		}
		data, err := json.Marshal(times)
		if err != nil {
			return fmt.Errorf("encode the volume deletion record: %w", err)
		}
		owner := client.FieldOwner(plugins.FieldManagerFor(Kind))
		if exists {
			// A merge patch that carries the resourceVersion read: another
			// pass or host that wrote meanwhile makes it a Conflict, retried.
			base := cm.DeepCopy()
			cm.Data = map[string]string{deleteRecordKey: string(data)}
			err = r.writer.Patch(ctx, &cm, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), owner)
		} else {
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.key.Namespace, Name: r.key.Name, Labels: map[string]string{
				plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: Kind, plugins.LabelRole: RoleDeleteRecord}},
				Data: map[string]string{deleteRecordKey: string(data)}}
			err = r.writer.Create(ctx, &cm, owner)
		}
		if err != nil {
			return fmt.Errorf("write the volume deletion record %s: %w", r.key, err)
		}
		allowed = true
		return nil
	})
	return allowed, err
}

// recentDeletes decodes the record's times and keeps those after cut.
func recentDeletes(raw string, cut time.Time) ([]time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	var times []time.Time
	if err := json.Unmarshal([]byte(raw), &times); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(times, func(t time.Time) bool { return !t.After(cut) }), nil
}
