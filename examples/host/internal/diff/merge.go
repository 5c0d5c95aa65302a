package diff

// This file holds how diff tells what a server-side apply would make of a
// live object: locally, with the API server's own merge (structured merge
// diff, through apimachinery's field manager) over the live object and its
// managed fields; or, with ServerDryRun, by asking the API server for a
// dry run of the apply.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoac "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// merger merges applied configurations into live objects as the API server
// would. The field managers of each kind are made once and shared, as the
// API server shares one per resource.
type merger struct {
	converter managedfields.TypeConverter
	mu        sync.Mutex
	managers  map[schema.GroupVersionKind]*managedfields.FieldManager
}

func newMerger() *merger {
	builtIn := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(builtIn)
	return &merger{
		// client-go's kinds with their schemas (list types, map keys);
		// the others, custom resources, deduced from the objects.
		converter: firstConverter{clientgoac.NewTypeConverter(builtIn), managedfields.NewDeducedTypeConverter()},
		managers:  map[schema.GroupVersionKind]*managedfields.FieldManager{},
	}
}

func (m *merger) manager(gvk schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fm, ok := m.managers[gvk]; ok {
		return fm, nil
	}
	fm, err := managedfields.NewDefaultFieldManager(m.converter, sameVersion{}, noDefaults{}, creater{}, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		return nil, err
	}
	m.managers[gvk] = fm
	return fm, nil
}

// apply returns live (nil: none) after the apply of applied by manager.
// Fields manager owns in live's managed fields that applied no longer holds
// are removed, unless another manager owns them too.
func (m *merger) apply(live, applied *unstructured.Unstructured, manager string, force bool) (*unstructured.Unstructured, error) {
	gvk := applied.GroupVersionKind()
	fm, err := m.manager(gvk)
	if err != nil {
		return nil, err
	}
	base := live
	if base == nil {
		base = &unstructured.Unstructured{}
		base.SetGroupVersionKind(gvk)
	}
	out, err := fm.Apply(base.DeepCopy(), applied.DeepCopy(), manager, force)
	if err != nil {
		return nil, err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("merge made a %T", out)
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// merge returns what the apply of applied (its request body: body) by
// manager would make of before (nil: no object yet).
func (d *Differ) merge(ctx context.Context, c client.Client, before, applied *unstructured.Unstructured, body []byte, manager string, force bool) (*unstructured.Unstructured, error) {
	if !d.serverDryRun {
		return d.merger.apply(before, applied, manager, force)
	}
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(applied.GroupVersionKind())
	out.SetNamespace(applied.GetNamespace())
	out.SetName(applied.GetName())
	opts := []client.PatchOption{client.FieldOwner(manager), client.DryRunAll}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	if err := c.Patch(ctx, out, client.RawPatch(types.ApplyPatchType, body), opts...); err != nil {
		return nil, fmt.Errorf("server-side dry run: %w", err)
	}
	return out, nil
}

// firstConverter asks each of its converters in turn.
type firstConverter []managedfields.TypeConverter

func (f firstConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	var errs []error
	for _, c := range f {
		v, err := c.ObjectToTyped(obj, opts...)
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (f firstConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	var errs []error
	for _, c := range f {
		obj, err := c.TypedToObject(v)
		if err == nil {
			return obj, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// sameVersion converts nothing: diff merges an object in the version it
// was read and applied in.
type sameVersion struct{}

func (sameVersion) Convert(_, _, _ any) error { return errors.New("conversion is not supported") }

func (sameVersion) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func (sameVersion) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// noDefaults defaults nothing: the live object holds the API server's
// defaults already, and an applied configuration is compared as sent.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// creater makes empty unstructured objects.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
