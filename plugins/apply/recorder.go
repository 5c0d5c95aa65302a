package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Recorder is the Objects of a host that talks to no server, such as
// offline rendering: it records what a pass would apply, each object with
// the labels, owner reference and hash an Applier gives it and checked by
// the same rules, and reports it as Created. It reads nothing and deletes
// nothing.
type Recorder struct {
	// rules prepares objects as an Applier of the same options would.
	rules    *Applier
	recorded []*unstructured.Unstructured
}

var _ plugins.Objects = (*Recorder)(nil)

// NewRecorder returns a Recorder for plugin kind and Profile p. opts are
// the options New takes; those about reading and writing have no effect.
func NewRecorder(kind string, p *kubeflowv1.Profile, owns []schema.GroupVersionKind, opts ...Option) *Recorder {
	a := &Applier{kind: kind, profile: p, owns: owns}
	for _, o := range opts {
		o(a)
	}
	return &Recorder{rules: a}
}

// Recorded returns the objects the pass would have applied, in the order it
// reports them, and the partial objects Annotate and Mark would have
// applied.
func (r *Recorder) Recorded() []*unstructured.Unstructured { return r.recorded }

// Sync records desired.
func (r *Recorder) Sync(_ context.Context, desired ...runtime.ApplyConfiguration) (plugins.Result, error) {
	return r.record(desired)
}

// Apply records desired.
func (r *Recorder) Apply(_ context.Context, desired ...runtime.ApplyConfiguration) (plugins.Result, error) {
	return r.record(desired)
}

// DeleteAll does nothing.
func (r *Recorder) DeleteAll(context.Context) (plugins.Result, error) { return plugins.Result{}, nil }

// Keep does nothing: a Recorder prunes nothing.
func (r *Recorder) Keep(schema.GroupVersionKind, string, string) {}

// Annotate records the partial object an Applier would apply to obj.
func (r *Recorder) Annotate(ctx context.Context, live client.Reader, obj plugins.Foreign, want map[string]string) (plugins.Change, error) {
	return r.Mark(ctx, live, obj, plugins.Marks{Annotations: want})
}

// Unannotate does nothing.
func (r *Recorder) Unannotate(_ context.Context, _ client.Reader, obj plugins.Foreign, _ ...string) (plugins.Change, error) {
	return plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}, nil
}

// Mark records the partial object an Applier would apply to obj.
func (r *Recorder) Mark(_ context.Context, _ client.Reader, obj plugins.Foreign, want plugins.Marks) (plugins.Change, error) {
	r.recorded = append(r.recorded, foreignApply(obj, "", want))
	return plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name, Action: plugins.Configured}, nil
}

// Unmark does nothing.
func (r *Recorder) Unmark(ctx context.Context, live client.Reader, obj plugins.Foreign) (plugins.Change, error) {
	return r.Unannotate(ctx, live, obj)
}

// Adopting returns r: what would be adopted is recorded like the rest.
func (r *Recorder) Adopting(func(live client.Object) error, client.Reader) plugins.Objects { return r }

func (r *Recorder) record(desired []runtime.ApplyConfiguration) (plugins.Result, error) {
	objs, err := r.rules.prepare(desired)
	if err != nil {
		return plugins.Result{}, err
	}
	var res plugins.Result
	for _, u := range objs {
		r.recorded = append(r.recorded, u)
		res.Add(plugins.Change{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Action: plugins.Created})
	}
	return res, nil
}
