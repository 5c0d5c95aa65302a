package apply

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
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
	// shardKeys are the Profile's label keys every object carries under
	// ShardKey (WithShardLabels).
	shardKeys []string
	owns      []schema.GroupVersionKind
	reader    client.Reader
	live      client.Reader
	writer    client.Writer
	scheme    *runtime.Scheme
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
	// seen, with adopt, shows the Profile's namespace when it is not ours
	// (see Adopting).
	seen client.Reader

	// metadata are the owned kinds read as metadata only (WithMetadataOnly).
	metadata []schema.GroupVersionKind
	// exclusive are the owned kinds kept exactly as desired (WithExclusive).
	exclusive []schema.GroupVersionKind

	// kept are objects the plugin owns that Sync leaves in place although
	// they are not desired (see Keep).
	kept map[objectKey]bool

	// repairs, when set, bounds how often an object someone else changed
	// is put back (WithRepairGate).
	repairs RepairGate

	// observer, when set, is told of every create and apply (see
	// WithWriteObserver).
	observer *serialObserver
}

// Adopting returns a copy of a that takes over objects of the desired names
// that carry no app.kubernetes.io/managed-by label at all, such as those the
// upstream controller wrote, by applying over them in place: the same object
// (same UID) gets our fields and labels, nothing is deleted or recreated.
// Objects labelled by anyone (another profilekit plugin or Profile, another
// tool) are never taken. Each object costs one request where the API
// server can refuse what must not be taken:
//
//   - the Profile's namespace: may decides on it as the Applier read it
//     right before it would be taken, from seen (a reader of objects the
//     Applier does not own, such as a host's metadata watch of namespaces;
//     nil for none), or from the API server when an object of the name
//     turned up that the caches did not show; the apply carries the
//     resource version may saw, so that a namespace changed since is
//     refused, read again and judged again. An error from may leaves it
//     untouched and is the object's error. The caller's rule then holds for
//     a namespace made a moment ago as well as for a cached one;
//   - an object in the namespace, written only once the namespace was
//     written: an apply that does not force ownership, which the API server
//     refuses, changing nothing, when another writer holds a field it sets
//     with another value (a managed-by label, another owner's value;
//     the fields of an object without managed fields count as another
//     writer's). Only a refused object is read, and is then taken (with
//     force, at the version read) if it carries no managed-by label and
//     may accepts it, as the namespace.
//
// Adopting has effect only with WithUpstreamObjects.
func (a *Applier) Adopting(may func(live client.Object) error, seen client.Reader) plugins.Objects {
	b := *a
	b.adopt = a.upstream
	b.mayAdopt = may
	b.seen = seen
	return &b
}

// namespaceGVK is the kind of the Profile's namespace.
var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// New returns an Applier for plugin kind and Profile p, which writes
// objects of the kinds in owns through c.
func New(c plugins.Cluster, kind string, p *kubeflowv1.Profile, owns []schema.GroupVersionKind, opts ...Option) *Applier {
	a := &Applier{kind: kind, profile: p, owns: owns, reader: c, writer: c}
	for _, o := range opts {
		o(a)
	}
	return a
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
func (a *Applier) Sync(ctx context.Context, desired ...runtime.ApplyConfiguration) (plugins.Result, error) {
	objs, err := a.prepare(desired)
	if err != nil {
		return plugins.Result{}, err
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
func (a *Applier) Apply(ctx context.Context, desired ...runtime.ApplyConfiguration) (plugins.Result, error) {
	objs, err := a.prepare(desired)
	if err != nil {
		return plugins.Result{}, err
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
func (a *Applier) applyAll(ctx context.Context, objs []*unstructured.Unstructured) (plugins.Result, []error) {
	changes := make([]plugins.Change, len(objs))
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
			if objs[i].GetNamespace() != plugins.Namespace(a.profile) {
				return false
			}
			k := keyOf(objs[i])
			changes[i] = plugins.Change{Kind: k.gvk.Kind, Namespace: k.namespace, Name: k.name, Action: plugins.Skipped}
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
	var res plugins.Result
	for _, c := range changes {
		if c.Action != "" {
			res.Add(c)
		}
	}
	return res, slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// DeleteAll deletes every object the plugin owns for the Profile, except its
// outside-state record, which Outside keeps.
func (a *Applier) DeleteAll(ctx context.Context) (plugins.Result, error) {
	return a.prune(ctx, nil)
}
