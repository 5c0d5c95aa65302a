package plugins

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// Applier writes the objects of one plugin for one Profile.
//
// Sync takes the complete desired set as apply configurations that hold only
// the fields the plugin owns. For each object it adds the ownership labels,
// the owner reference to the Profile, and a hash of the whole configuration;
// it sends nothing when the live object (read from the cache) already holds all
// of that, and otherwise applies it server-side with the plugin's field manager
// and forced ownership. It then deletes, by label selector, the objects it owns
// that are no longer desired. An object with a desired name that is not ours
// is never written: it is reported as Skipped and as a Conflict error.
//
// An object the cache does not hold is created by an apply that can only
// create (see createOnly), so a first apply costs one request and no read.
// Only when that apply finds an object of the name is it read, to tell a
// cache that has not caught up with our own object from an object we do
// not own.
type Applier struct {
	kind    string
	profile *kubeflowv1.Profile
	owns    []schema.GroupVersionKind
	reader  client.Reader
	live    client.Reader
	writer  client.Writer
	scheme  *runtime.Scheme
	// anyNamespace lets the plugin write outside the Profile's namespace, and
	// makes pruning look for its objects in every namespace.
	anyNamespace bool
	// upstream lets the plugin write the Profile's namespace and upstream's
	// names (see WithUpstreamObjects); adopt, only with upstream, takes over
	// objects of those names that nobody labelled.
	upstream bool
	adopt    bool
	// mayAdopt, with adopt, decides on each live object that adopt would
	// take over (see Adopting).
	mayAdopt func(live client.Object) error

	// metadata are the owned kinds read as metadata only (WithMetadataOnly).
	metadata []schema.GroupVersionKind

	// kept are objects the plugin owns that Sync leaves in place although
	// they are not desired (see Keep).
	kept map[objectKey]bool

	// recorded, when not nil, makes Sync record the desired objects instead
	// of reading or writing anything.
	recorded *[]*unstructured.Unstructured

	// observer, when set, is told of every create and apply (see
	// WithWriteObserver).
	observer *serialObserver
}

// ApplierOption configures an Applier.
type ApplierOption func(*Applier)

// WithLiveReader sets an uncached reader that is asked when an object of a
// desired name exists but the cache does not hold it: a cache restricted to
// our labels cannot see an object we do not manage, and any cache may not yet
// hold an object we have just written. Without it the Applier asks its
// cache again, and reports an object the cache cannot show as not ours
// (Skipped, a Conflict error); nothing is overwritten either way.
func WithLiveReader(r client.Reader) ApplierOption {
	return func(a *Applier) { a.live = r }
}

// WithScheme makes the Applier read live objects as the typed objects the
// scheme knows (sharing the host's typed informers) instead of unstructured.
func WithScheme(s *runtime.Scheme) ApplierOption {
	return func(a *Applier) { a.scheme = s }
}

// WithMetadataOnly makes the Applier read and list objects of kinds as
// metadata only (*metav1.PartialObjectMetadata), the form in which a host
// caches the owned kinds whose bodies no plugin reads (Definition.MetadataOnly).
// Whether such an object holds what we want is then told by its
// applied-hash annotation and our managed-fields entry alone: server-side
// apply takes a field from our manager when anyone else changes or removes
// it, so every edit of a field we own shows there (see overtaken). An object
// without managed fields tells nothing and is applied again.
func WithMetadataOnly(kinds ...schema.GroupVersionKind) ApplierOption {
	return func(a *Applier) { a.metadata = append(a.metadata, kinds...) }
}

// WithAnyNamespace lets the plugin write objects outside the Profile's
// namespace. Pruning then lists the plugin's objects across all namespaces,
// which costs a scan of every cached object of each owned kind; without it,
// objects must be in the Profile's namespace and pruning lists only that
// namespace, which a cache answers from its namespace index. Hosts set it for
// plugins whose Definition has OutsideState.
func WithAnyNamespace() ApplierOption {
	return func(a *Applier) { a.anyNamespace = true }
}

// WithUpstreamObjects lets the plugin write what the upstream profile
// controller writes: the Profile's namespace (the one cluster-scoped object an
// Applier ever writes) and objects with upstream's names inside it. Hosts set
// it for the Definition with Upstream, which only the core plugin may have;
// every other rule of the Applier still holds.
func WithUpstreamObjects() ApplierOption {
	return func(a *Applier) { a.upstream = true }
}

// Adopting returns a copy of a that takes over objects of the desired names
// that carry no app.kubernetes.io/managed-by label at all, such as those the
// upstream controller wrote, by applying over them in place: the same object
// (same UID) gets our fields and labels, nothing is deleted or recreated.
// Objects labelled by anyone (another profilekit plugin or Profile, another
// tool) are never taken. may decides on each such object as the Applier
// read it right before it would be taken (from the cache, or from the API
// server when an object of the name turned up that the cache did not show):
// an error leaves it untouched and is the object's error. The caller's rule
// then holds for an object made a moment ago as well as for a cached one.
// Adopting has effect only with WithUpstreamObjects.
func (a *Applier) Adopting(may func(live client.Object) error) *Applier {
	b := *a
	b.adopt = a.upstream
	b.mayAdopt = may
	return &b
}

// namespaceGVK is the kind of the Profile's namespace.
var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// NewApplier returns an Applier for plugin kind and Profile p, which writes
// objects of the kinds in owns through c.
func NewApplier(c Cluster, kind string, p *kubeflowv1.Profile, owns []schema.GroupVersionKind, opts ...ApplierOption) *Applier {
	a := &Applier{kind: kind, profile: p, owns: owns, reader: c, writer: c}
	for _, o := range opts {
		o(a)
	}
	return a
}

// NewRecorder returns an Applier that talks to no server: Sync records the
// objects it would apply, with our labels, owner reference and hash, and
// reports them as Created; DeleteAll does nothing. Offline rendering uses it.
// opts are the same options NewApplier takes; those about reading and
// writing have no effect.
func NewRecorder(kind string, p *kubeflowv1.Profile, owns []schema.GroupVersionKind, opts ...ApplierOption) *Applier {
	a := &Applier{kind: kind, profile: p, owns: owns}
	for _, o := range opts {
		o(a)
	}
	a.recorded = &[]*unstructured.Unstructured{}
	return a
}

// Recorded returns the objects a recorder's Sync calls were given, in the
// order a pass reports them. It is nil for an Applier that writes.
func (a *Applier) Recorded() []*unstructured.Unstructured {
	if a.recorded == nil {
		return nil
	}
	return *a.recorded
}

// Keep makes Sync leave the plugin's object of kind gvk at namespace/name in
// place although it is not desired: neither written nor pruned. A copy whose
// source is gone for the moment is one.
func (a *Applier) Keep(gvk schema.GroupVersionKind, namespace, name string) {
	if a.kept == nil {
		a.kept = map[objectKey]bool{}
	}
	a.kept[objectKey{gvk: gvk, namespace: namespace, name: name}] = true
}

// Sync applies desired and deletes the plugin's other objects for the Profile.
// Errors of independent objects are joined; one failing object does not stop
// the others.
func (a *Applier) Sync(ctx context.Context, desired ...runtime.ApplyConfiguration) (Result, error) {
	objs, err := a.prepare(desired)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if a.recorded != nil {
		for _, u := range objs {
			*a.recorded = append(*a.recorded, u)
			res.Add(Change{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Action: Created})
		}
		return res, nil
	}
	res, errs := a.applyAll(ctx, objs)
	keep := make(map[objectKey]bool, len(objs)+len(a.kept))
	maps.Copy(keep, a.kept)
	for _, u := range objs {
		keep[keyOf(u)] = true
	}
	pruned, err := a.prune(ctx, keep)
	res.Merge(pruned)
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// Apply applies desired like Sync but deletes nothing. It is for plugins
// that decide their deletions themselves, such as volumes that must not go
// while a pod mounts them; they delete through the request's Client, and
// only objects that carry their ownership labels.
func (a *Applier) Apply(ctx context.Context, desired ...runtime.ApplyConfiguration) (Result, error) {
	objs, err := a.prepare(desired)
	if err != nil {
		return Result{}, err
	}
	if a.recorded != nil {
		var res Result
		for _, u := range objs {
			*a.recorded = append(*a.recorded, u)
			res.Add(Change{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Action: Created})
		}
		return res, nil
	}
	res, errs := a.applyAll(ctx, objs)
	return res, errors.Join(errs...)
}

// maxParallelApplies is how many namespaced objects one pass applies at once.
const maxParallelApplies = 8

// applyAll applies objs: the cluster-scoped ones first, one after another
// and before anything else (a namespace before what goes into it), then the
// namespaced ones at once, up to maxParallelApplies. A Profile's first pass
// then waits about one round trip for all its objects of one namespace, not
// one for each, when the API server is busy. The changes and errors keep
// the order of objs.
func (a *Applier) applyAll(ctx context.Context, objs []*unstructured.Unstructured) (Result, []error) {
	changes := make([]Change, len(objs))
	errs := make([]error, len(objs))
	var namespaced []int
	profileNamespaceFailed := false
	for i, u := range objs {
		if u.GetNamespace() != "" {
			namespaced = append(namespaced, i)
			continue
		}
		changes[i], errs[i] = a.applyOne(ctx, u)
		if a.isProfileNamespace(keyOf(u)) && errs[i] != nil {
			profileNamespaceFailed = true
		}
	}
	if profileNamespaceFailed {
		// What goes into the namespace waits for it: written into a
		// namespace that is not the Profile's, it would land in someone
		// else's.
		namespaced = slices.DeleteFunc(namespaced, func(i int) bool {
			if objs[i].GetNamespace() != Namespace(a.profile) {
				return false
			}
			k := keyOf(objs[i])
			changes[i] = Change{Kind: k.gvk.Kind, Namespace: k.namespace, Name: k.name, Action: Skipped}
			return true
		})
	}
	if len(namespaced) == 1 {
		i := namespaced[0]
		changes[i], errs[i] = a.applyOne(ctx, objs[i])
	} else if len(namespaced) > 1 {
		places := make(chan struct{}, maxParallelApplies)
		var wg sync.WaitGroup
		for _, i := range namespaced {
			places <- struct{}{}
			wg.Go(func() {
				defer func() { <-places }()
				changes[i], errs[i] = a.applyOne(ctx, objs[i])
			})
		}
		wg.Wait()
	}
	var res Result
	for _, c := range changes {
		if c.Action != "" {
			res.Add(c)
		}
	}
	return res, slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// DeleteAll deletes every object the plugin owns for the Profile, except its
// outside-state record, which Outside keeps.
func (a *Applier) DeleteAll(ctx context.Context) (Result, error) {
	if a.recorded != nil {
		return Result{}, nil
	}
	return a.prune(ctx, nil)
}

// prepare turns apply configurations into unstructured objects that carry our
// labels, owner reference and hash, sorted so that a pass reports them, and
// sends its cluster-scoped ones, in a stable order.
func (a *Applier) prepare(desired []runtime.ApplyConfiguration) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(desired))
	seen := make(map[objectKey]bool, len(desired))
	for _, d := range desired {
		u, err := toUnstructured(d)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", a.kind, err)
		}
		k := keyOf(u)
		switch {
		case k.name == "" || k.gvk.Kind == "":
			return nil, fmt.Errorf("plugin %s: desired object has no kind or name: %s", a.kind, k.gvk)
		case !slices.Contains(a.owns, k.gvk):
			return nil, fmt.Errorf("plugin %s: %s is not among the kinds the plugin owns", a.kind, k.gvk)
		case a.isProfileNamespace(k):
			if !a.upstream {
				return nil, Terminalf(ReasonInvalidConfig, "plugin %s: the namespace %s is the core plugin's, no other plugin writes it", a.kind, k.name)
			}
		case !a.anyNamespace && k.namespace != Namespace(a.profile):
			return nil, fmt.Errorf("plugin %s: %s %s/%s is outside the Profile's namespace %s; a plugin that writes elsewhere keeps outside state", a.kind, k.gvk.Kind, k.namespace, k.name, Namespace(a.profile))
		case IsUpstreamName(k.name) && !a.upstream:
			return nil, Terminalf(ReasonInvalidConfig, "plugin %s: %s %q is the upstream controller's, profilekit never writes it", a.kind, k.gvk.Kind, k.name)
		case seen[k]:
			return nil, fmt.Errorf("plugin %s: %s %s/%s is desired twice", a.kind, k.gvk.Kind, k.namespace, k.name)
		}
		seen[k] = true
		a.own(u)
		objs = append(objs, u)
	}
	slices.SortFunc(objs, func(x, y *unstructured.Unstructured) int { return compareKeys(keyOf(x), keyOf(y)) })
	return objs, nil
}

// isProfileNamespace reports whether k is the Profile's namespace itself.
func (a *Applier) isProfileNamespace(k objectKey) bool {
	return k.gvk == namespaceGVK && k.namespace == "" && k.name == Namespace(a.profile)
}

// own adds the ownership labels, the owner reference and the hash annotation.
func (a *Applier) own(u *unstructured.Unstructured) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, OwnershipLabels(a.kind, a.profile.Name))
	u.SetLabels(l)

	refs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
	_ = unstructured.SetNestedSlice(u.Object, append(refs, ownerReferenceFields(a.profile)), "metadata", "ownerReferences")

	ann := u.GetAnnotations()
	delete(ann, AnnotationAppliedHash)
	if len(ann) == 0 {
		u.SetAnnotations(nil)
	}
	sum := sha256.Sum256(a.templateOf(mustJSON(u.Object)))
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAppliedHash] = hex.EncodeToString(sum[:8])
	u.SetAnnotations(ann)
}

// templateOf returns data, an object's JSON, with the Profile's UID and name
// replaced by bytes JSON never holds (control characters are escaped in its
// strings). Objects rendered alike for many Profiles then hash alike, and
// the cache holds their hash annotation once; for one Profile, two objects
// hash alike only when their JSON is the same, since the replacement can be
// undone.
func (a *Applier) templateOf(data []byte) []byte {
	if uid := a.profile.UID; uid != "" {
		data = bytes.ReplaceAll(data, []byte(uid), []byte{1})
	}
	if name := a.profile.Name; name != "" {
		data = bytes.ReplaceAll(data, []byte(name), []byte{0})
	}
	return data
}

func mustJSON(v any) []byte {
	// The object was decoded from JSON a moment ago, so it encodes again.
	b, _ := json.Marshal(v)
	return b
}

// createOnly is the resource version a create-first apply carries. An apply
// with a resource version is refused with a Conflict when the object exists
// at any other version, and creates the object when none exists, so an apply
// with this one creates or does nothing: no object will ever reach it (it is
// the largest resource version there is).
const createOnly = "18446744073709551615"

// applyOne writes u unless the live object already holds it.
func (a *Applier) applyOne(ctx context.Context, u *unstructured.Unstructured) (Change, error) {
	k := keyOf(u)
	change := Change{Kind: k.gvk.Kind, Namespace: k.namespace, Name: k.name}
	live, err := a.read(ctx, a.reader, k)
	if err != nil {
		return change, fmt.Errorf("read %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	if live == nil && a.writtenUnseen(u) {
		change.Action = Unchanged
		return change, nil
	}
	if live == nil {
		err := a.create(ctx, u)
		if err == nil {
			change.Action = Created
			log.FromContext(ctx).V(1).Info("applied", "kind", k.gvk.Kind, "object", types.NamespacedName{Namespace: k.namespace, Name: k.name}, "action", Created)
			return change, nil
		}
		if !apierrors.IsConflict(err) {
			return change, fmt.Errorf("create %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
		}
		// An object of the name exists: ours, written a moment ago and not
		// yet in the cache, or someone else's.
		live, err = a.read(ctx, cmp.Or[client.Reader](a.live, a.reader), k)
		if err != nil {
			return change, fmt.Errorf("read %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
		}
		switch {
		case live == nil && a.live == nil:
			// The cache cannot show it, so it is not one of ours; had
			// it been ours, its arrival in the cache brings us back.
			change.Action = Skipped
			return change, Terminalf(ReasonConflict, "%s %s/%s exists and is not among the objects plugin %s manages for profile %s; left untouched",
				k.gvk.Kind, k.namespace, k.name, a.kind, a.profile.Name)
		case live == nil:
			change.Action = Skipped
			return change, fmt.Errorf("%s %s/%s exists but was gone when read to check who owns it; not written, will try again", k.gvk.Kind, k.namespace, k.name)
		}
	}
	return a.update(ctx, u, live, change)
}

// update writes u over live, the object of its name as read, if live is
// ours (or one to adopt) and does not hold u yet. The apply carries the
// resourceVersion live was read at: an object that changed since (in a
// cache that is behind, or by another writer a moment ago) refuses it with
// a conflict, and is then read from the API server and judged again, so
// that an object someone took over meanwhile is never written.
func (a *Applier) update(ctx context.Context, u *unstructured.Unstructured, live *liveObject, change Change) (Change, error) {
	k := keyOf(u)
	for attempt := 0; ; attempt++ {
		owned := IsOwnedBy(live.GetLabels(), a.kind, a.profile.Name)
		adopted := !owned && a.adopt && live.GetLabels()[LabelManagedBy] == ""
		if !owned && !adopted {
			change.Action = Skipped
			return change, Terminalf(ReasonConflict, "%s %s/%s exists and is not managed by plugin %s for profile %s; left untouched",
				k.gvk.Kind, k.namespace, k.name, a.kind, a.profile.Name)
		}
		if adopted && a.mayAdopt != nil {
			if err := a.mayAdopt(live.Unstructured); err != nil {
				change.Action = Skipped
				return change, err
			}
		}
		if a.inSync(live, u) {
			change.Action = Unchanged
			return change, nil
		}
		err := a.send(ctx, atVersion(u, live.GetResourceVersion()))
		if apierrors.IsConflict(err) && attempt == 0 && a.live != nil {
			if live, err = a.read(ctx, a.live, k); err != nil {
				return change, fmt.Errorf("read %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
			}
			if live == nil {
				change.Action = Skipped
				return change, fmt.Errorf("%s %s/%s was deleted while it was being written; will try again", k.gvk.Kind, k.namespace, k.name)
			}
			continue
		}
		if isImmutable(err) {
			return a.replace(ctx, live.Unstructured, u, change, err)
		}
		if err != nil {
			return change, fmt.Errorf("apply %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
		}
		change.Action = Configured
		log.FromContext(ctx).V(1).Info("applied", "kind", k.gvk.Kind, "object", types.NamespacedName{Namespace: k.namespace, Name: k.name}, "action", Configured, "adopted", adopted)
		return change, nil
	}
}

// atVersion returns u to be applied only over the object at version (none:
// u itself), sharing u's content.
func atVersion(u *unstructured.Unstructured, version string) *unstructured.Unstructured {
	if version == "" {
		return u
	}
	obj := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	obj.Object["metadata"] = maps.Clone(u.Object["metadata"].(map[string]any))
	obj.SetResourceVersion(version)
	return obj
}

// inSync reports whether live, our object, already holds everything u sets:
// the same applied hash, and every field of u still ours. A whole object
// must also hold u's values; one read as metadata only has no body to
// compare, so its managed fields must be there to tell.
func (a *Applier) inSync(live *liveObject, u *unstructured.Unstructured) bool {
	if live.GetAnnotations()[AnnotationAppliedHash] != u.GetAnnotations()[AnnotationAppliedHash] {
		return false
	}
	ours, known := ownFields(live.managedFields, FieldManagerFor(a.kind))
	if overtaken(ours, known, u) {
		return false
	}
	if slices.Contains(a.metadata, u.GroupVersionKind()) {
		return known
	}
	return contains(live.Object, u.Object, ours, known && ours != nil)
}

// create sends u as an apply that can only create: it fails with a Conflict,
// and changes nothing, when an object of the name exists.
func (a *Applier) create(ctx context.Context, u *unstructured.Unstructured) error {
	return a.send(ctx, atVersion(u, createOnly))
}

// newObject returns an empty object of gvk in the form the Applier reads it.
func (a *Applier) newObject(gvk schema.GroupVersionKind) (client.Object, error) {
	if slices.Contains(a.metadata, gvk) {
		return NewMetadata(gvk), nil
	}
	return NewObject(a.scheme, gvk)
}

// get reads the live object from the cache, then, when the cache has none and
// a live reader is set, from the API server. It returns nil when neither has one.
func (a *Applier) get(ctx context.Context, k objectKey) (*liveObject, error) {
	for _, r := range []client.Reader{a.reader, a.live} {
		if r == nil {
			continue
		}
		live, err := a.read(ctx, r, k)
		if live != nil || err != nil {
			return live, err
		}
	}
	return nil, nil
}

// read reads the object k through r, nil when there is none.
func (a *Applier) read(ctx context.Context, r client.Reader, k objectKey) (*liveObject, error) {
	obj, err := a.newObject(k.gvk)
	if err != nil {
		return nil, err
	}
	err = r.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Typed reads, from an uncached reader in particular, may leave the
	// kind empty; without it the object would never match what we want.
	obj.GetObjectKind().SetGroupVersionKind(k.gvk)
	return newLiveObject(obj)
}

// liveObject is an object as the Applier read it: its content as
// unstructured, for comparison, without its managed fields, which it keeps
// as read. A typed object's managed fields are taken as they are: converted
// to unstructured and back, each set decoded to a map on the way, they
// cost more than the rest of the object.
type liveObject struct {
	*unstructured.Unstructured
	managedFields []metav1.ManagedFieldsEntry
}

// newLiveObject takes obj, which the caller read and no one else holds.
func newLiveObject(obj client.Object) (*liveObject, error) {
	managed := obj.GetManagedFields()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		return &liveObject{Unstructured: u, managedFields: managed}, nil
	}
	obj.SetManagedFields(nil)
	u, err := asUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &liveObject{Unstructured: u, managedFields: managed}, nil
}
