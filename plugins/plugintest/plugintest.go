package plugintest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

// T is what the harness needs of a test: a *testing.T.
type T interface {
	Helper()
	Name() string
	Context() context.Context
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

var _ T = (*testing.T)(nil)

// Scenario is one plugin, the host's defaults for it, and the steps one
// Profile takes with it: each step sets (or removes) the Profile's
// spec.plugins entry and is run to quiet.
type Scenario struct {
	// Def is the plugin.
	Def plugins.Definition
	// Defaults are the host's defaults for it (JSON), as a host passes them.
	Defaults []byte
	// Steps are run in order; the first makes the Profile.
	Steps []Step
	// MakesNamespace is true for a plugin that makes the Profile's
	// namespace itself (core); otherwise the harness makes it, as the
	// upstream controller or core would.
	MakesNamespace bool
	// Setup, when set, makes what the plugin expects in a new Profile's
	// namespace, such as the service accounts a cloud identity plugin
	// annotates.
	Setup func(ctx context.Context, c client.Client, namespace string) error
	// Observe, when set, returns what the plugin made true beyond its
	// objects for the Profile of namespace (an outside system's state, the
	// annotations it owns on objects it does not), compared after every
	// plan like its objects.
	Observe func(ctx context.Context, namespace string) (map[string]string, error)
	// Touches are the objects the plugin may write although it does not
	// own them (the objects it annotates), as "Kind <profile>/name".
	Touches []string
	// Grants, when set, returns the access the plugin gives in an outside
	// system for the Profile of namespace (a role's trust, an IAM binding,
	// a credential), one string per grant naming its principal. The
	// harness adds the subjects of the RoleBindings and the rules of the
	// AuthorizationPolicies the plugin owns. Checked after every write of a
	// plan: no grant may appear that neither the step before nor the step
	// after holds, not even for a moment.
	Grants func(ctx context.Context, namespace string) ([]string, error)
	// Data, when set, returns the user data the plugin keeps for the
	// Profile of namespace (databases, containers, volumes) as name ->
	// identity (a UID, an OID, a creation time: what changes when it is
	// deleted and made again). Checked after every write of a plan: what
	// the step keeps may not be deleted, not even to be made again.
	Data func(ctx context.Context, namespace string) (map[string]string, error)
	// Retained are the prefixes of the keys Observe returns (with the
	// Profile's name as <profile>) that may
	// outlive the Profile: the user data the host's Retain policy keeps,
	// what lives in the Profile's namespace (which goes with it), and what
	// Observe watches without the plugin owning it. Anything else Observe
	// still reports after a Delete step is left behind.
	Retained []string
}

// Step is one change of the Profile.
type Step struct {
	// Name says what the step does, for messages.
	Name string
	// Spec is the plugin's spec.plugins entry after the step (marshalled to
	// JSON; nil lists the plugin without a spec). {{ .Profile }} in it
	// stands for the run's Profile name, as for an outside identity made
	// for each run.
	Spec any
	// Remove drops the plugin from spec.plugins: the passes revoke.
	Remove bool
	// Delete deletes the Profile, as the last step: a plugin with outside
	// state revokes under its finalizer, with the Profile's spec; the
	// garbage collector takes the rest, so everything the plugin still
	// holds must carry an owner reference to the Profile.
	Delete bool
	// Labels, when set, are the Profile's labels from this step on, for a
	// plugin that selects Profiles by label.
	Labels map[string]string
	// Defaults, when set, are the host's defaults for the plugin from this
	// step on: a change of the host's configuration.
	Defaults []byte
	// Change, when set, changes what else the plugin reads, before the
	// step's passes, as a tenant or another controller would: a
	// contributor's RoleBinding made, a source Secret rewritten.
	Change func(ctx context.Context, c client.Client, namespace string) error
	// Error, when set, is what the step's last pass fails with, as a
	// documented False condition: the step is quiet when a pass writes
	// nothing and fails with an error that holds this text.
	Error string
}

// Harness runs scenarios against a real API server and checks what each
// perturbed run leaves against the run without perturbation.
type Harness struct {
	// Client reaches the API server without a cache.
	Client client.Client
	// RecordsNamespace holds the outside-state records; it is made when
	// missing.
	RecordsNamespace string
}

// holdFinalizer keeps a deleted Profile readable, as the plugins'
// finalizers do on a host, so that a Delete step's passes see it.
const holdFinalizer = plugins.FinalizerPrefix + "plugintest-hold"

// maxPasses bounds a run to quiet: a plugin that still writes after so
// many passes never settles.
const maxPasses = 6

// run is one Profile of a scenario on the API server.
type run struct {
	h       Harness
	sc      Scenario
	profile *kubeflowv1.Profile
	records *outside.Records
	// step is the step the Profile is at; defaults, the host's defaults
	// then.
	step     Step
	defaults []byte
	// watch, when set, is checked after every write of every pass.
	watch *watcher
	// reads are the kinds the run's passes read; views, those the
	// scenario's baseline read, which a snapshot holds.
	reads reads
	views []read
}

// newRun makes a namespace and a Profile named for one run.
func (h Harness) newRun(ctx context.Context, sc Scenario, prefix string) (*run, error) {
	if err := h.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.recordsNamespace()}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	name := prefix + "-" + rand.String(5)
	if !sc.MakesNamespace {
		if err := h.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return nil, err
		}
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{holdFinalizer}},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"}},
	}
	if err := h.Client.Create(ctx, p); err != nil {
		return nil, err
	}
	if sc.Setup != nil {
		if err := sc.Setup(ctx, h.Client, name); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	return &run{h: h, sc: sc, profile: p, records: outside.NewRecords(), defaults: sc.Defaults}, nil
}

func (h Harness) recordsNamespace() string {
	if h.RecordsNamespace != "" {
		return h.RecordsNamespace
	}
	return outside.DefaultRecordsNamespace
}

// set makes the Profile what step s says.
func (r *run) set(ctx context.Context, s Step) error {
	r.step = s
	if s.Defaults != nil {
		r.defaults = s.Defaults
	}
	if s.Labels != nil {
		r.profile.Labels = s.Labels
	}
	if s.Change != nil {
		if err := s.Change(ctx, r.h.Client, r.profile.Name); err != nil {
			return fmt.Errorf("step %q: change: %w", s.Name, err)
		}
	}
	if s.Delete {
		if err := r.h.Client.Delete(ctx, r.profile); err != nil {
			return err
		}
		return r.h.Client.Get(ctx, client.ObjectKeyFromObject(r.profile), r.profile)
	}
	kind := r.sc.Def.Kind()
	r.profile.Spec.Plugins = slices.DeleteFunc(r.profile.Spec.Plugins, func(p kubeflowv1.Plugin) bool { return p.Kind == kind })
	if s.Remove {
		return nil
	}
	entry := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: kind}}
	if s.Spec != nil {
		raw, err := json.Marshal(s.Spec)
		if err != nil {
			return err
		}
		raw = []byte(strings.ReplaceAll(string(raw), "{{ .Profile }}", r.profile.Name))
		entry.Spec = &runtime.RawExtension{Raw: raw}
	}
	r.profile.Spec.Plugins = append(r.profile.Spec.Plugins, entry)
	return nil
}

// perturbation is what one pass suffers: the writes and outside calls it
// may make before the host stops (all when negative), a hook before write
// i, and a failure of outside call i before or after it is made.
type perturbation struct {
	allow  int
	before func(i int)
	fail   func(i int, made bool) error
}

// whole is a pass that nothing perturbs.
var whole = perturbation{allow: -1}

// pass runs one pass of the plugin for the Profile as a host does: a fresh
// Applier and outside-state record, reading through reads (the host's
// cache) and writing to the API server, then the record written. rec
// records its writes and outside calls, perturbed as pt says.
func (r *run) pass(ctx context.Context, reads client.Reader, rec *recorder, pt perturbation) error {
	def := r.sc.Def
	deleting := !r.profile.DeletionTimestamp.IsZero()
	if deleting && def.Finalizer() == "" {
		return nil // a host runs nothing: owner references hand the objects to the garbage collector
	}
	if r.watch != nil {
		rec.after = func() { r.watch.check(ctx) }
	}
	c := split{Client: rec.wrap(r.h.Client, pt.allow, pt.before), reads: reads, note: r.noteRead}
	record := outside.New(c, def.Kind(), r.profile, outside.Options{Namespace: r.h.recordsNamespace()},
		outside.WithLiveReader(r.h.Client), outside.WithRecords(r.records), outside.WithCallGate(rec.outside(pt.allow, pt.before, pt.fail)))
	req := plugins.Request{
		Profile:   r.profile,
		Client:    c,
		Objects:   apply.New(c, def.Kind(), r.profile, def.Owns, append(apply.OptionsFor(def), apply.WithLiveReader(r.h.Client))...),
		Outside:   record,
		Retention: plugins.RetentionRetain,
		Live:      r.h.Client,
	}
	var err error
	switch {
	case deleting:
		// As a host finalizes: the Profile's own spec, or the host's
		// defaults when it no longer decodes.
		if req.Config, err = def.Decode(r.defaults, r.profile); err != nil {
			if req.Config, err = def.DecodeHostDefaults(r.defaults); err != nil {
				return err
			}
		}
		_, err = def.Plugin.Revoke(ctx, req)
	case plugins.Listed(r.profile, def.Kind()):
		if req.Config, err = def.Decode(r.defaults, r.profile); err != nil {
			return err
		}
		_, err = def.Plugin.Apply(ctx, req)
	default:
		if req.Config, err = def.DecodeHostDefaults(r.defaults); err != nil {
			return err
		}
		_, err = def.Plugin.Revoke(ctx, req)
	}
	return errors.Join(err, record.Flush(ctx))
}

// quiet runs passes, each with a fresh process state and reading from the
// API server, until one writes nothing: for a plugin the Profile lists.
// A host revokes a plugin the Profile no longer lists until a Revoke
// succeeds, and then no more; such a run ends with that pass. It returns
// the writes of every pass, and fails when the plugin does not settle or
// its last pass fails.
func (r *run) quiet(ctx context.Context) ([][]Write, error) {
	var passes [][]Write
	var err error
	revoking := !plugins.Listed(r.profile, r.sc.Def.Kind()) || !r.profile.DeletionTimestamp.IsZero()
	for range maxPasses {
		r.records = outside.NewRecords()
		rec := &recorder{}
		err = r.pass(ctx, r.h.Client, rec, whole)
		passes = append(passes, rec.writes)
		if revoking && err == nil {
			return passes, nil
		}
		if len(rec.writes) == 0 {
			switch {
			case r.step.Error != "" && (err == nil || !strings.Contains(err.Error(), r.step.Error)):
				return passes, fmt.Errorf("the pass that wrote nothing ended with %v, not with %q", err, r.step.Error)
			case err != nil && r.step.Error == "":
				return passes, fmt.Errorf("the pass that wrote nothing failed: %w", err)
			}
			return passes, nil
		}
	}
	return passes, fmt.Errorf("not quiet after %d passes; the last wrote %v and failed with %v", maxPasses, passes[len(passes)-1], err)
}

// state is what the plugin holds for the Profile: every object of its
// kinds that carries its labels for the Profile (once the Profile is
// deleted, those the garbage collector does not take), as JSON without
// what the API server sets, with the Profile's name and UID replaced, by
// kind and name.
func (r *run) state(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, gvk := range r.sc.Def.Owns {
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.h.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(r.sc.Def.Kind(), r.profile.Name)}); err != nil {
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, u := range list.Items {
			if u.GetDeletionTimestamp() != nil || r.collected(u) {
				continue
			}
			key := gvk.Kind + " " + r.generic(u.GetNamespace()+"/"+u.GetName())
			out[key] = r.generic(normalized(u))
		}
	}
	if r.sc.Observe != nil {
		seen, err := r.sc.Observe(ctx, r.profile.Name)
		if err != nil {
			return nil, fmt.Errorf("observe: %w", err)
		}
		for k, v := range seen {
			out["observed "+r.generic(k)] = r.generic(v)
		}
	}
	return out, nil
}

// collected reports whether the garbage collector takes u: the Profile is
// deleted and u names it as its owner.
func (r *run) collected(u unstructured.Unstructured) bool {
	return !r.profile.DeletionTimestamp.IsZero() &&
		slices.ContainsFunc(u.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == r.profile.UID })
}

// generic replaces the Profile's UID and name in s, so that two runs of a
// scenario compare.
func (r *run) generic(s string) string {
	if uid := string(r.profile.UID); uid != "" {
		s = strings.ReplaceAll(s, uid, "<uid>")
	}
	return strings.ReplaceAll(s, r.profile.Name, "<profile>")
}

// normalized is u as JSON without what the API server sets.
func normalized(u unstructured.Unstructured) string {
	obj := u.DeepCopy().Object
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		unstructured.RemoveNestedField(obj, "metadata", f)
	}
	delete(obj, "status")
	b, _ := json.Marshal(obj)
	return string(b)
}

// names returns the keys of states.
func names(states ...map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, s := range states {
		for k := range maps.Keys(s) {
			out[k] = true
		}
	}
	return out
}

// fail reports a violation with the line that reruns its plan.
func fail(t T, plan string, format string, args ...any) {
	t.Helper()
	t.Errorf("%s: %s\n\trerun: %s=%q go test -run '^%s$'", plan, fmt.Sprintf(format, args...), PlanEnv, plan, t.Name())
}
