// Package diff shows what a host configuration would do to the Profiles of
// a live cluster before the host runs with it, as kubectl diff does for
// manifests.
//
// For every Profile it runs the plugins as run would on its next pass (the
// same plugin code, the same Applier, through render's live mode), with
// every read going to the cluster and every write recorded instead of sent:
// a client that answers each write as the API server would (a create-only
// apply over an existing object is a Conflict, a stale resource version
// too) and sends nothing. Every outside call (a database, Azure, OPA, cloud
// IAM) is refused through the outside call gate and recorded. What a
// server-side apply would make of each live object is merged locally with
// the API server's own merge, over the live object's managed fields, so
// that fields our field manager owns and the new configuration drops show
// as removed; ServerDryRun asks the API server instead, which needs the
// write rights the host has.
package diff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/plugins"
)

// Verb is what would happen to an object.
type Verb string

// The verbs, in the order the summary lists them.
const (
	VerbCreate Verb = "create"
	VerbChange Verb = "change"
	VerbDelete Verb = "delete"
)

// Change is one object a pass would create, change or delete.
type Change struct {
	// Profile and Plugin name the pass that would write it.
	Profile, Plugin string
	Verb            Verb
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Before is the live object (nil for a create), After what it would
	// be (nil for a delete).
	Before, After *unstructured.Unstructured
	// Note says what the diff could not tell, if anything.
	Note string
}

// Call is an outside call a pass would make.
type Call struct {
	Profile, Plugin, System string
}

// Result is what the configuration would do to one Profile.
type Result struct {
	// Profile is the Profile's name.
	Profile string
	// Changes are sorted by plugin, then object.
	Changes []Change
	// Calls are the outside calls its passes would make, refused.
	Calls []Call
	// Errors are why a plugin would fail on the Profile, or why the diff
	// could not tell: the Profile's diff is then incomplete.
	Errors []string
	// Notes are worth knowing and change nothing.
	Notes []string
}

// Touched reports whether anything would change for the Profile.
func (r Result) Touched() bool { return len(r.Changes) > 0 || len(r.Calls) > 0 }

// Options configure a Differ.
type Options struct {
	// ServerDryRun merges each apply with a dry run on the API server,
	// which needs patch rights on every kind the plugins write.
	ServerDryRun bool
	// Concurrency is how many Profiles are diffed at once. Default 8.
	Concurrency int
	// Progress, when set, is called once each Profile is diffed, from the
	// goroutine that diffed it.
	Progress func()
}

// Differ diffs Profiles against a host configuration.
type Differ struct {
	cfg          *hostconfig.Config
	reg          *plugins.Registry
	scheme       *runtime.Scheme
	client       client.WithWatch
	serverDryRun bool
	concurrency  int
	progress     func()
	merger       *merger
	renderer     *render.Renderer

	mu         sync.Mutex
	collectors map[string]*collector
}

// New returns a Differ for the plugins of reg configured by cfg, which
// reads the cluster through c and never writes through it (but for dry
// runs, with ServerDryRun).
func New(cfg *hostconfig.Config, reg *plugins.Registry, scheme *runtime.Scheme, c client.WithWatch, opts Options) *Differ {
	d := &Differ{
		cfg: cfg, reg: reg, scheme: scheme, client: c,
		serverDryRun: opts.ServerDryRun,
		concurrency:  cmp.Or(opts.Concurrency, 8),
		progress:     opts.Progress,
		merger:       newMerger(),
		collectors:   map[string]*collector{},
	}
	d.renderer = render.New(cfg, reg, scheme).WithCluster(d)
	return d
}

// collector gathers the passes of one Profile.
type collector struct {
	mu     sync.Mutex
	passes []*pass
}

func (c *collector) add(p *pass) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passes = append(c.passes, p)
}

func (d *Differ) collector(profile string) *collector {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.collectors[profile]
	if !ok {
		c = &collector{}
		d.collectors[profile] = c
	}
	return c
}

// Diff runs the plugins for each Profile and returns what they would do,
// by Profile name. A failure on one Profile is in its Result and does not
// stop the others.
func (d *Differ) Diff(ctx context.Context, profiles []*kubeflowv1.Profile) []Result {
	results := make([]Result, len(profiles))
	places := make(chan struct{}, d.concurrency)
	var wg sync.WaitGroup
	for i, p := range profiles {
		places <- struct{}{}
		wg.Go(func() {
			defer func() { <-places }()
			results[i] = d.one(ctx, p)
			if d.progress != nil {
				d.progress()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(results, func(a, b Result) int { return cmp.Compare(a.Profile, b.Profile) })
	return results
}

// one diffs one Profile.
func (d *Differ) one(ctx context.Context, p *kubeflowv1.Profile) Result {
	res := Result{Profile: p.Name}
	outcomes, notes := d.renderer.Check(ctx, p)
	res.Notes = append(res.Notes, notes...)
	d.mu.Lock()
	col := d.collectors[p.Name]
	delete(d.collectors, p.Name)
	d.mu.Unlock()
	byPlugin := map[string]*pass{}
	if col != nil {
		for _, ps := range col.passes {
			byPlugin[ps.plugin] = ps
		}
	}
	for _, o := range outcomes {
		ps := byPlugin[o.Kind]
		if ps != nil {
			res.Changes = append(res.Changes, ps.changes...)
			res.Notes = append(res.Notes, ps.notes...)
			for _, system := range ps.calls {
				res.Calls = append(res.Calls, Call{Profile: p.Name, Plugin: o.Kind, System: system})
			}
		}
		switch {
		case o.Err == nil:
		case onlyRefused(o.Err):
			res.Notes = append(res.Notes, fmt.Sprintf("plugin %s: stops at an outside call diff refused; what its pass would do after that is not shown", o.Kind))
		case o.Revoke:
			res.Errors = append(res.Errors, fmt.Sprintf("plugin %s: revoke would fail: %s", o.Kind, plugins.FailureMessage(o.Err, plugins.ReasonRevokeFailed)))
		default:
			res.Errors = append(res.Errors, fmt.Sprintf("plugin %s: %s", o.Kind, o.Message()))
		}
		if c, ok := d.finalizer(p, o); ok {
			res.Changes = append(res.Changes, c)
		}
	}
	slices.SortStableFunc(res.Changes, compareChanges)
	return res
}

// finalizer returns the change to the Profile that run makes before a
// plugin with outside state first applies: its finalizer.
func (d *Differ) finalizer(p *kubeflowv1.Profile, o render.Outcome) (Change, bool) {
	def, ok := d.reg.Get(o.Kind)
	fin := def.Finalizer()
	if !ok || o.Revoke || fin == "" || controllerutil.ContainsFinalizer(p, fin) {
		return Change{}, false
	}
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return Change{}, false
	}
	b := &unstructured.Unstructured{Object: before}
	b.SetGroupVersionKind(kubeflowv1.GroupVersion.WithKind("Profile"))
	a := b.DeepCopy()
	a.SetFinalizers(append(a.GetFinalizers(), fin))
	return Change{Profile: p.Name, Plugin: o.Kind, Verb: VerbChange, GVK: b.GroupVersionKind(), Name: p.Name, Before: b, After: a}, true
}

// onlyRefused reports whether every error err joins is a refused outside
// call.
func onlyRefused(err error) bool {
	switch x := err.(type) {
	case nil:
		return false
	case interface{ Unwrap() []error }:
		errs := x.Unwrap()
		return len(errs) > 0 && !slices.ContainsFunc(errs, func(e error) bool { return !onlyRefused(e) })
	case interface{ Unwrap() error }:
		return err == errRefused || onlyRefused(x.Unwrap())
	}
	return errors.Is(err, errRefused)
}

func compareChanges(a, b Change) int {
	return cmp.Or(
		cmp.Compare(a.Plugin, b.Plugin),
		cmp.Compare(a.GVK.Group, b.GVK.Group),
		cmp.Compare(a.GVK.Kind, b.GVK.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
	)
}
