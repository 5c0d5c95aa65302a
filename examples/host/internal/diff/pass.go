package diff

// This file holds one plugin's pass on one Profile as diff runs it: a
// client whose reads go to the cluster and whose writes are recorded and
// answered as the API server would answer them, never sent; the Applier
// and the outside-state record of run over that client; and a call gate
// that refuses every outside call and records it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

// createOnly is the resource version of the Applier's create-first apply
// (see plugins/apply): the API server refuses it with a Conflict when an
// object of the name exists.
const createOnly = "18446744073709551615"

// errRefused is what every outside call of a pass fails with: diff calls
// no outside system.
var errRefused = errors.New("refused: diff calls no outside system")

// pass records what one plugin's pass on one Profile would write and call.
type pass struct {
	d       *Differ
	profile string
	plugin  string

	mu      sync.Mutex
	changes []Change
	calls   []string
	notes   []string
}

// Pass returns what def's pass on p runs with: run's Applier and
// outside-state record over a client that reads the cluster and records
// every write.
func (d *Differ) Pass(def plugins.Definition, sec hostconfig.Plugin, p *kubeflowv1.Profile) render.Pass {
	ps := &pass{d: d, profile: p.Name, plugin: def.Kind()}
	d.collector(p.Name).add(ps)
	c := interceptor.NewClient(d.client, interceptor.Funcs{
		Create:            ps.create,
		Update:            ps.update,
		Patch:             ps.patch,
		Apply:             ps.applyConfiguration,
		Delete:            ps.delete,
		DeleteAllOf:       ps.deleteAllOf,
		SubResourceCreate: ps.subResourceCreate,
		SubResourceUpdate: ps.subResourceUpdate,
		SubResourcePatch:  ps.subResourcePatch,
		SubResourceApply:  ps.subResourceApply,
	})
	opts := append(apply.OptionsFor(def), apply.WithLiveReader(c), apply.WithScheme(d.scheme), apply.WithShardLabels(d.cfg.Shard()))
	gate := outside.WithCallGate(outside.CallGate{Before: func(system string) error {
		ps.mu.Lock()
		ps.calls = append(ps.calls, system)
		ps.mu.Unlock()
		return errRefused
	}})
	record := outside.New(c, def.Kind(), p, d.outsideOptions(sec), outside.WithLiveReader(c), gate)
	return render.Pass{
		Client:  c,
		Objects: apply.New(c, def.Kind(), p, def.Owns, opts...),
		Outside: record,
	}
}

// outsideOptions are the outside-state options run gives the plugin of sec.
func (d *Differ) outsideOptions(sec hostconfig.Plugin) outside.Options {
	o := outside.Options{Namespace: d.cfg.RecordsNamespace()}
	if sec.ReverifyPeriod != nil {
		o.Reverify = sec.ReverifyPeriod.Duration
	}
	return o
}

func (ps *pass) record(c Change) {
	c.Profile, c.Plugin = ps.profile, ps.plugin
	// Bookkeeping (outside-state records, ledgers, claims) is not what a
	// configuration change is about.
	for _, u := range []*unstructured.Unstructured{c.Before, c.After} {
		if u != nil && u.GetLabels()[plugins.LabelRole] != "" {
			return
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.changes = append(ps.changes, c)
}

func (ps *pass) note(format string, args ...any) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.notes = append(ps.notes, fmt.Sprintf(format, args...))
}

// live reads the object of gvk at key from the cluster, nil when there is
// none.
func live(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(ctx, key, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
	}
	return u, nil
}

// gvkOf returns obj's kind, from the object or the scheme.
func (ps *pass) gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !gvk.Empty() {
		return gvk, nil
	}
	gvks, _, err := ps.d.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}

// asUnstructured returns obj as an unstructured object of its kind.
func (ps *pass) asUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := ps.gvkOf(obj)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// applyObject answers a server-side apply of u as the API server would,
// with its preconditions (the Applier's create-only resource version, a
// resource version, a uid), and records the object it would make.
func (ps *pass) applyObject(ctx context.Context, c client.WithWatch, u *unstructured.Unstructured, body []byte, manager string, force bool) error {
	gvk := u.GroupVersionKind()
	key := client.ObjectKeyFromObject(u)
	before, err := live(ctx, c, gvk, key)
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	rv, uid := u.GetResourceVersion(), u.GetUID()
	switch {
	case rv == createOnly && before != nil,
		rv != "" && rv != createOnly && (before == nil || before.GetResourceVersion() != rv):
		return apierrors.NewConflict(gr, key.Name, errors.New("the object has been modified"))
	case uid != "" && (before == nil || before.GetUID() != uid):
		return apierrors.NewConflict(gr, key.Name, errors.New("uid precondition failed"))
	}
	applied := u.DeepCopy()
	applied.SetResourceVersion("")
	applied.SetUID("")
	after, err := ps.d.merge(ctx, c, before, applied, body, manager, force)
	if err != nil && ps.d.serverDryRun {
		// The API server refused the dry run: what the apply would make
		// is unknown, as would be the apply's own fate.
		return err
	}
	if err == nil && same(before, after) {
		// The apply would move ownership of fields, nothing a diff shows.
		return nil
	}
	ch := Change{Verb: VerbCreate, GVK: gvk, Namespace: key.Namespace, Name: key.Name, Before: before, After: after}
	if before != nil {
		ch.Verb = VerbChange
	}
	if err != nil {
		ch.After = applied
		ch.Note = fmt.Sprintf("the merge with the live object failed (%v); shown is the applied configuration", err)
	}
	ps.record(ch)
	return nil
}

func (ps *pass) patch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	if patch.Type() == types.ApplyPatchType {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		return ps.applyObject(ctx, c, u, data, po.FieldManager, po.Force != nil && *po.Force)
	}
	gvk, err := ps.gvkOf(obj)
	if err != nil {
		return err
	}
	ps.note("plugin %s would send a %s patch to %s %s: %s", ps.plugin, patch.Type(), gvk.Kind, client.ObjectKeyFromObject(obj), data)
	return nil
}

func (ps *pass) applyConfiguration(ctx context.Context, c client.WithWatch, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	ao := &client.ApplyOptions{}
	ao.ApplyOptions(opts)
	data, err := json.Marshal(ac)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return ps.applyObject(ctx, c, u, data, ao.FieldManager, ao.Force != nil && *ao.Force)
}

func (ps *pass) create(ctx context.Context, c client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
	u, err := ps.asUnstructured(obj)
	if err != nil {
		return err
	}
	before, err := live(ctx, c, u.GroupVersionKind(), client.ObjectKeyFromObject(u))
	if err != nil {
		return err
	}
	if before != nil {
		return apierrors.NewAlreadyExists(schema.GroupResource{Group: u.GroupVersionKind().Group, Resource: u.GetKind()}, u.GetName())
	}
	ps.record(Change{Verb: VerbCreate, GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName(), After: u})
	return nil
}

func (ps *pass) update(ctx context.Context, c client.WithWatch, obj client.Object, _ ...client.UpdateOption) error {
	u, err := ps.asUnstructured(obj)
	if err != nil {
		return err
	}
	gvk := u.GroupVersionKind()
	before, err := live(ctx, c, gvk, client.ObjectKeyFromObject(u))
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	switch {
	case before == nil:
		return apierrors.NewNotFound(gr, u.GetName())
	case u.GetResourceVersion() != "" && u.GetResourceVersion() != before.GetResourceVersion():
		return apierrors.NewConflict(gr, u.GetName(), errors.New("the object has been modified"))
	}
	ps.record(Change{Verb: VerbChange, GVK: gvk, Namespace: u.GetNamespace(), Name: u.GetName(), Before: before, After: u})
	return nil
}

func (ps *pass) delete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	do := &client.DeleteOptions{}
	do.ApplyOptions(opts)
	gvk, err := ps.gvkOf(obj)
	if err != nil {
		return err
	}
	before, err := live(ctx, c, gvk, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if before == nil {
		return apierrors.NewNotFound(gr, obj.GetName())
	}
	if pre := do.Preconditions; pre != nil {
		if pre.UID != nil && *pre.UID != before.GetUID() || pre.ResourceVersion != nil && *pre.ResourceVersion != before.GetResourceVersion() {
			return apierrors.NewConflict(gr, obj.GetName(), errors.New("precondition failed"))
		}
	}
	ps.record(Change{Verb: VerbDelete, GVK: gvk, Namespace: before.GetNamespace(), Name: before.GetName(), Before: before})
	return nil
}

func (ps *pass) deleteAllOf(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
	do := &client.DeleteAllOfOptions{}
	do.ApplyOptions(opts)
	gvk, err := ps.gvkOf(obj)
	if err != nil {
		return err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, &do.ListOptions); err != nil {
		return err
	}
	for i := range list.Items {
		u := &list.Items[i]
		ps.record(Change{Verb: VerbDelete, GVK: gvk, Namespace: u.GetNamespace(), Name: u.GetName(), Before: u})
	}
	return nil
}

func (ps *pass) subResource(name string, obj client.Object) error {
	gvk, err := ps.gvkOf(obj)
	if err != nil {
		return err
	}
	ps.note("plugin %s would write the %s of %s %s", ps.plugin, name, gvk.Kind, client.ObjectKeyFromObject(obj))
	return nil
}

func (ps *pass) subResourceCreate(_ context.Context, _ client.Client, name string, obj, _ client.Object, _ ...client.SubResourceCreateOption) error {
	return ps.subResource(name, obj)
}

func (ps *pass) subResourceUpdate(_ context.Context, _ client.Client, name string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	return ps.subResource(name, obj)
}

func (ps *pass) subResourcePatch(_ context.Context, _ client.Client, name string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
	return ps.subResource(name, obj)
}

func (ps *pass) subResourceApply(_ context.Context, _ client.Client, name string, _ runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	ps.note("plugin %s would apply the %s subresource of an object", ps.plugin, name)
	return nil
}
