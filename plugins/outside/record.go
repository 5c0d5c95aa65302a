package outside

// This file holds where an Outside keeps its record and how it reads and
// writes it: a ConfigMap in the host's own namespace, named by the plugin
// and the Profile's UID, which no tenant can write.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// DefaultRecordsNamespace holds the outside-state records unless the host
// names its own namespace (Options.Namespace).
const DefaultRecordsNamespace = "profilekit-system"

// recordKey is the ConfigMap data key that holds the record.
const recordKey = "state.json"

// RecordName returns the name of the ConfigMap that holds plugin kind's
// outside-state record for the Profile of UID uid, in the host's namespace.
// The UID, not the Profile's name, keys it: a Profile made again under a
// deleted one's name starts from no record, and inherits nothing the last
// one was given.
func RecordName(kind string, uid types.UID) string {
	return "profilekit-" + strings.ToLower(kind) + "-" + string(uid)
}

// StateName returns the name of the ConfigMap in which earlier versions kept
// plugin kind's outside-state record, in the Profile's own namespace, where
// the tenant can write it. Only MigrateRecords reads it, once.
func StateName(kind string) string {
	return "profilekit-" + strings.ToLower(kind) + "-state"
}

// recordNamespace is the namespace of the Outside's record.
func (o *Outside) recordNamespace() string {
	if o.opts.Namespace != "" {
		return o.opts.Namespace
	}
	return DefaultRecordsNamespace
}

// recordRef is the record's namespace and name.
func (o *Outside) recordRef() types.NamespacedName {
	return types.NamespacedName{Namespace: o.recordNamespace(), Name: RecordName(o.kind, o.profile.UID)}
}

// Records is a host's memory of the outside-state records that its
// passes wrote, for one plugin: the version of each record's last write (or
// its deletion), kept until a read from the cache shows that write. A pass
// whose cache is behind would otherwise decide from the record as it was
// before: a piece removed a moment before and named again would read as
// still made, and not be made again, while every record says it is there.
// Such a pass reads the record from the API server instead. Hosts keep one
// per plugin and give it to every Outside with WithRecords; it is
// safe for concurrent use, and holds only the writes the cache has not
// shown yet.
type Records struct {
	mu      sync.Mutex
	written map[types.NamespacedName]string
}

// NewRecords returns an empty Records.
func NewRecords() *Records {
	return &Records{written: map[types.NamespacedName]string{}}
}

// wrote remembers the version of a write of the record at k ("" when it
// was deleted).
func (r *Records) wrote(k types.NamespacedName, version string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written[k] = version
}

// behind reports whether a copy of the record at k at version ("" when
// there is none) may predate the last write of it, and forgets that write
// once a copy shows it.
func (r *Records) behind(k types.NamespacedName, version string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.written[k]
	if ok && last == version {
		delete(r.written, k)
		return false
	}
	return ok
}

// saw moves the version that the cache must show before it is trusted for
// the record at k, when it is waited for, to the version a read from the
// API server found: a write by someone else since this host's own.
func (r *Records) saw(k types.NamespacedName, version string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.written[k]; ok {
		r.written[k] = version
	}
}

// Flush writes the record when Ensure or Forget changed it: one server-side
// apply, or a delete when it became empty. A record that cannot be written is
// an error, and the next pass calls the outside system again, which outside
// calls must therefore tolerate (they are idempotent).
func (o *Outside) Flush(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.offline || !o.dirty {
		return nil
	}
	ref := o.recordRef()
	if len(o.entries) == 0 {
		if !o.exists {
			o.dirty = false
			return nil
		}
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ref.Namespace, ref.Name
		var opts []client.DeleteOption
		if o.uid != "" {
			opts = append(opts, client.Preconditions{UID: &o.uid})
		}
		if err := o.writer.Delete(ctx, cm, opts...); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("plugin %s: delete outside-state record %s: %w", o.kind, ref, err)
		}
		o.records.wrote(ref, "")
		o.exists, o.dirty = false, false
		return o.release(ctx)
	}
	data, err := json.Marshal(o.entries)
	if err != nil {
		return fmt.Errorf("plugin %s: encode outside-state record: %w", o.kind, err)
	}
	labels := plugins.OwnershipLabels(o.kind, o.profile.Name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	// The owner reference hands the record to the garbage collector with
	// its Profile (a cluster-scoped owner is legal from any namespace).
	cm := corev1ac.ConfigMap(ref.Name, ref.Namespace).
		WithLabels(labels).
		WithOwnerReferences(plugins.OwnerReference(o.profile)).
		WithData(map[string]string{recordKey: string(data)})
	if err := o.writer.Apply(ctx, cm, client.FieldOwner(plugins.FieldManagerFor(o.kind)), client.ForceOwnership); err != nil {
		return fmt.Errorf("plugin %s: write outside-state record %s: %w", o.kind, ref, err)
	}
	o.records.wrote(ref, ptr.Deref(cm.ResourceVersion, ""))
	o.exists, o.dirty = true, false
	return o.release(ctx)
}

// release lets the claims go whose pieces the record no longer holds, once
// keys were forgotten. The caller holds o.mu.
func (o *Outside) release(ctx context.Context) error {
	if !o.forgot {
		return nil
	}
	if err := o.releaseClaims(ctx); err != nil {
		return err
	}
	o.forgot = false
	return nil
}

// load reads the record once from the cache, or (live) once from the API
// server when a live reader is set. Entries changed in memory are kept.
//
// The record lives in the host's namespace, where no tenant can write: what
// it holds was written by a host (or an administrator), so it is taken as
// it is. A record that does not decode is as good as none: every piece is
// made true again, which is safe, and the record is rewritten.
func (o *Outside) load(ctx context.Context, live bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.reader
	switch {
	case live && o.live != nil && !o.fresh:
		r = o.live
	case o.loaded:
		return nil
	}
	if o.profile.UID == "" {
		return fmt.Errorf("plugin %s: Profile %s has no UID to key its outside-state record by", o.kind, o.profile.Name)
	}
	key := o.recordRef()
	var cm corev1.ConfigMap
	err := r.Get(ctx, key, &cm)
	if r != o.live && o.live != nil && (err == nil || apierrors.IsNotFound(err)) && o.records.behind(key, cm.ResourceVersion) {
		// The cache has not shown this host's last write of the record.
		r, cm = o.live, corev1.ConfigMap{}
		err = r.Get(ctx, key, &cm)
	}
	if r == o.live && (err == nil || apierrors.IsNotFound(err)) {
		o.records.saw(key, cm.ResourceVersion)
	}
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{}
	case err != nil:
		return fmt.Errorf("plugin %s: read outside-state record: %w", o.kind, err)
	case !plugins.IsOwnedBy(cm.Labels, o.kind, o.profile.Name):
		return plugins.Terminalf(plugins.ReasonConflict, "ConfigMap %s/%s exists and is not plugin %s's outside-state record; left untouched",
			cm.Namespace, cm.Name, o.kind)
	}
	entries := map[string]outsideEntry{}
	if raw := cm.Data[recordKey]; raw != "" && json.Unmarshal([]byte(raw), &entries) != nil {
		entries = map[string]outsideEntry{}
	}
	if o.dirty {
		// Keep what this pass already changed.
		for k, e := range o.entries {
			entries[k] = e
		}
	}
	o.entries = entries
	o.exists, o.uid = cm.Name != "", cm.UID
	o.loaded = true
	o.fresh = o.fresh || r == o.live
	return nil
}
