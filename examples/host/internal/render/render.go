// Package render shows, without a cluster, the objects the host's plugins
// would write for a set of Profiles.
//
// Each plugin that applies to a Profile decodes its config as the running host
// would, then runs its Apply with a recording Applier (apply.NewRecorder) and
// a fake client that holds only the Profile. Nothing is read from or written
// to a cluster, so a plugin whose output depends on other live objects renders
// as if they did not exist.
package render

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoac "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/plugins/replicate"
)

// Object is one rendered object and where it came from.
type Object struct {
	// Profile is the name of the Profile the object belongs to.
	Profile string
	// Plugin is the kind of the plugin that would write it.
	Plugin string
	// Object is what the plugin would apply, ownership labels included.
	Object *unstructured.Unstructured
}

// Output is what rendering a set of Profiles produced.
type Output struct {
	// Objects are in input order of the Profiles, then by plugin kind, then
	// in the order the plugin would apply them.
	Objects []Object
	// Notes are things worth knowing that are not errors, such as a Profile
	// that lists a plugin this host does not run.
	Notes []string
}

// Renderer renders Profiles with a host configuration.
type Renderer struct {
	cfg    *hostconfig.Config
	reg    *plugins.Registry
	scheme *runtime.Scheme
	// objects are the cluster's objects that plugins read, such as the
	// sources the replicate plugin copies.
	objects []client.Object
	// converters type the fake client's server-side applies. Made once: a
	// fake client makes its own for every build otherwise, which is most of
	// a check's cost, and the admission webhook checks on every request.
	converters []managedfields.TypeConverter
	mapper     meta.RESTMapper
	// cluster, when set, runs the plugins against a live cluster (see
	// WithCluster).
	cluster Cluster
	// claims, when set, reads who holds a piece of shared outside state
	// in the records' namespace claimsNamespace (see WithClaims).
	claims          client.Reader
	claimsNamespace string
}

// New returns a Renderer for the plugins in reg, configured by cfg. The
// scheme holds the kinds the fake client serves.
func New(cfg *hostconfig.Config, reg *plugins.Registry, scheme *runtime.Scheme) *Renderer {
	builtIn := runtime.NewScheme()
	// client-go's kinds only, so that the typed converter refuses the
	// others and the deduced one serves them.
	_ = clientgoscheme.AddToScheme(builtIn)
	return &Renderer{
		cfg: cfg, reg: reg, scheme: scheme,
		converters: []managedfields.TypeConverter{clientgoac.NewTypeConverter(builtIn), managedfields.NewDeducedTypeConverter()},
		mapper:     meta.NewDefaultRESTMapper(nil),
	}
}

// Outcome is what one plugin would do for one Profile.
type Outcome struct {
	// Kind is the plugin's kind, Condition the type of its condition.
	Kind, Condition string
	// Objects are what the plugin would apply, when Err is nil.
	Objects []*unstructured.Unstructured
	// Err is why the plugin would fail: what its condition would report.
	Err error
	// Revoke says that the plugin no longer applies to the Profile, which
	// shows it was there, and that its Revoke ran (only against a cluster,
	// see WithCluster).
	Revoke bool
	// Unchecked are the checks only an outside system can answer (a tag
	// read from the cloud), which the host makes and rendering cannot.
	Unchecked []string
}

// Message is what a Profile's author reads for a failed outcome: the
// condition's type and the message the host would set on it, bounded.
func (o Outcome) Message() string {
	return o.Condition + " would be False: " + plugins.FailureMessage(o.Err, plugins.ReasonApplyFailed)
}

// Refused reports whether the outcome fails on the Profile's own input: a
// terminal InvalidSpec or InvalidLabel error, a cloud identity the host's
// allowances refuse (IdentityNotAllowed), or a piece of shared outside
// state that another Profile holds (a Conflict, which offline only a claim
// read through WithClaims gives), none of which a retry can fix. Other
// failures (a host misconfiguration, a plugin that cannot run offline) are
// not the Profile's to fix.
func (o Outcome) Refused() bool {
	if o.Err == nil || !plugins.IsTerminal(o.Err) {
		return false
	}
	switch plugins.ReasonOf(o.Err, "") {
	case plugins.ReasonInvalidSpec, plugins.ReasonInvalidLabel, plugins.ReasonIdentityNotAllowed, plugins.ReasonConflict:
		return true
	}
	return false
}

// WithClaims lets the plugins read, through r, who holds a piece of shared
// outside state (a cloud identity): the claims and outside-state records in
// namespace, the host's records namespace, read as the host reads them and
// never written. Without it, rendering knows of no other Profile's claim.
func (r *Renderer) WithClaims(c client.Reader, namespace string) *Renderer {
	r.claims, r.claimsNamespace = c, namespace
	return r
}

// WithObjects lets the plugins read objs, as if they were in the cluster.
func (r *Renderer) WithObjects(objs ...client.Object) *Renderer {
	r.objects = append(r.objects, objs...)
	return r
}

// Render runs every plugin that applies to each Profile. Errors of different
// Profiles and plugins are joined, each naming the Profile, the plugin's
// condition and the message it would carry; the objects of the ones that
// succeeded are returned with them.
func (r *Renderer) Render(ctx context.Context, profiles []*kubeflowv1.Profile) (Output, error) {
	var out Output
	var errs []error
	for _, p := range profiles {
		outcomes, notes := r.Check(ctx, p)
		out.Notes = append(out.Notes, notes...)
		for _, o := range outcomes {
			if o.Err != nil {
				errs = append(errs, fmt.Errorf("profile %s: %s", p.Name, o.Message()))
				continue
			}
			for _, u := range o.Objects {
				out.Objects = append(out.Objects, Object{Profile: p.Name, Plugin: o.Kind, Object: Redact(u)})
			}
		}
	}
	return out, errors.Join(errs...)
}

// Check runs every plugin that applies to p, by kind, as the host would: it
// decodes the host's defaults and the Profile's spec, then runs Apply with a
// recording Applier, so that every check a plugin makes of the spec and the
// labels runs, and nothing is written. Offline rendering and the admission
// webhook both call it, so that both report exactly what the condition would.
func (r *Renderer) Check(ctx context.Context, p *kubeflowv1.Profile) ([]Outcome, []string) {
	if !r.cfg.InShard(p.Labels) {
		return nil, []string{fmt.Sprintf("profile %s: outside this host's shard, nothing rendered", p.Name)}
	}
	if r.cluster != nil && !p.DeletionTimestamp.IsZero() {
		return nil, []string{fmt.Sprintf("profile %s: being deleted, only its finalizers would run", p.Name)}
	}
	var notes []string
	for _, entry := range p.Spec.Plugins {
		if _, on := r.cfg.Section(entry.Kind); !on {
			notes = append(notes, fmt.Sprintf("profile %s: lists plugin %s, which this host does not run", p.Name, entry.Kind))
		}
	}
	var outcomes []Outcome
	for _, kind := range r.cfg.Enabled() {
		sec, _ := r.cfg.Section(kind)
		applies := sec.Applies(plugins.Listed(p, kind), p.Labels)
		def, ok := r.reg.Get(kind)
		switch {
		case !applies && (!ok || !r.leftOn(def, p)):
			continue
		case !ok:
			outcomes = append(outcomes, Outcome{Kind: kind, Condition: plugins.ConditionTypeFor(kind), Err: fmt.Errorf("plugin %s: not built into this host", kind)})
			continue
		case !applies:
			outcomes = append(outcomes, r.revoke(ctx, def, sec, p))
			continue
		case r.cluster != nil && plugins.Paused(p, kind):
			notes = append(notes, fmt.Sprintf("profile %s: plugin %s: paused (%s), nothing would change", p.Name, kind, plugins.AnnotationPaused))
			continue
		}
		objs, skipped, unchecked, err := r.apply(ctx, def, sec, p)
		if r.cluster == nil && plugins.ReasonOf(err, "") == replicate.ReasonSourceNotFound {
			// The cluster holds the sources; render has only what -f gave.
			notes = append(notes, fmt.Sprintf("profile %s: plugin %s: %v; give the sources with -f to render their copies", p.Name, kind, err))
			err = nil
		}
		outcomes = append(outcomes, Outcome{Kind: kind, Condition: def.Condition(), Objects: objs, Err: err, Unchecked: unchecked})
		if err != nil {
			continue
		}
		for _, call := range skipped {
			notes = append(notes, fmt.Sprintf("profile %s: plugin %s: skipped outside call %s (render calls no outside system)", p.Name, kind, call))
		}
	}
	return outcomes, notes
}

// apply runs one plugin offline and returns the objects it would write, the
// outside calls it would make and what only those calls could check.
func (r *Renderer) apply(ctx context.Context, def plugins.Definition, sec hostconfig.Plugin, p *kubeflowv1.Profile) ([]*unstructured.Unstructured, []string, []string, error) {
	// Decode's errors already name the plugin's entry and the field.
	cfg, err := def.Decode(sec.Defaults, p)
	if err != nil {
		return nil, nil, nil, err
	}
	def, mapper, err := r.forHost(def, sec)
	if err != nil {
		return nil, nil, nil, err
	}
	if r.cluster != nil {
		return nil, nil, nil, r.livePass(ctx, def, sec, p, cfg, false)
	}
	objs := []client.Object{p.DeepCopy()}
	for _, o := range r.objects {
		objs = append(objs, o.DeepCopyObject().(client.Object))
	}
	c := fake.NewClientBuilder().
		WithScheme(r.scheme).
		WithTypeConverters(r.converters...).
		WithRESTMapper(mapper).
		WithObjects(objs...).
		WithStatusSubresource(&kubeflowv1.Profile{}).
		Build()
	rec := apply.NewRecorder(def.Kind(), p, def.Owns, append(apply.OptionsFor(def), apply.WithShardLabels(r.cfg.Shard()))...)
	var claims []outside.Option
	if r.claims != nil {
		claims = append(claims, outside.WithClaimsFrom(r.claims, r.claimsNamespace))
	}
	offline := outside.NewOffline(def.Kind(), p, claims...)
	_, err = def.Plugin.Apply(ctx, plugins.Request{
		Profile:   p,
		Config:    cfg,
		Client:    c,
		Objects:   rec,
		Outside:   offline,
		Retention: sec.Retention,
	})
	return rec.Recorded(), offline.Skipped(), offline.Unchecked(), err
}
