package plugintest

// This file holds one run of a scenario: its Profile, the steps it
// takes, one pass of the plugin as a host makes it, and a run to quiet.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

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
	// waiting is what the last pass said it waits for (Result.Waiting).
	waiting string
	// conflict is true while a run to quiet must end with a terminal
	// Conflict (someone else holds a name the plugin wants).
	conflict bool
	// watch, when set, is checked after every write of every pass.
	watch *watcher
	// reads are the kinds the run's passes read; views, those the
	// scenario's baseline read, which a snapshot holds.
	reads reads
	views []read

	// foreign are the grants there before the plugin's first pass, in the
	// generic form: someone else's (a pipeline's credential on the
	// Profile's identity), which no removal or deletion takes.
	foreign map[string]bool

	// callKey is the record key of the outside call under way.
	mu      sync.Mutex
	callKey string
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
	r := &run{h: h, sc: sc, profile: p, records: outside.NewRecords(), defaults: sc.Defaults}
	var err error
	if r.foreign, err = r.grants(ctx); err != nil {
		return nil, err
	}
	return r, nil
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
	r.waiting = ""
	if deleting && def.Finalizer() == "" {
		return nil // a host runs nothing: owner references hand the objects to the garbage collector
	}
	if r.watch != nil {
		rec.after = func(call bool) { r.watch.check(ctx, call) }
	}
	// req.Client reads what a host's cache holds of the view, req.Watched
	// the kinds the plugin watches whole, req.Live the API server.
	c := split{Client: rec.wrap(r.h.Client, pt.allow, pt.before), reads: cached{view: reads, scheme: r.h.Client.Scheme()}, note: r.noteRead}
	record := outside.New(c, def.Kind(), r.profile, outside.Options{Namespace: r.h.recordsNamespace()},
		outside.WithLiveReader(r.h.Client), outside.WithRecords(r.records), outside.WithCallGate(rec.outside(pt.allow, pt.before, pt.fail)))
	req := plugins.Request{
		Profile:   r.profile,
		Client:    c,
		Objects:   apply.New(c, def.Kind(), r.profile, def.Owns, append(apply.OptionsFor(def), apply.WithLiveReader(r.h.Client))...),
		Outside:   record,
		Retention: cmp.Or(r.sc.Retention, plugins.RetentionRetain),
		Live:      r.h.Client,
	}
	if len(def.Watches) > 0 {
		req.Watched = split{Client: c.Client, reads: reads, note: r.noteRead}
	}
	if r.h.mutant != nil {
		r.h.mutant.apply(&req, def, c, r.h.Client)
	}
	req.Outside = observed{Outside: req.Outside, r: r}
	var res plugins.Result
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
		res, err = def.Plugin.Revoke(ctx, req)
	case plugins.Listed(r.profile, def.Kind()):
		if req.Config, err = def.Decode(r.defaults, r.profile); err != nil {
			return err
		}
		res, err = def.Plugin.Apply(ctx, req)
	default:
		if req.Config, err = def.DecodeHostDefaults(r.defaults); err != nil {
			return err
		}
		res, err = def.Plugin.Revoke(ctx, req)
	}
	r.waiting = res.Waiting
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
	wait := maxWait
	for len(passes) < maxPasses {
		if r.sc.Between != nil {
			if err := r.sc.Between(ctx, r.h.Client, r.profile.Name); err != nil {
				return passes, fmt.Errorf("between passes: %w", err)
			}
		}
		r.records = outside.NewRecords()
		rec := &recorder{}
		err = r.pass(ctx, r.h.Client, rec, whole)
		if r.waiting != "" && err == nil && len(rec.writes) == 0 {
			// As a host requeues a pass that waits for another controller.
			if wait <= 0 {
				return passes, fmt.Errorf("still waiting after %v: %s", maxWait, r.waiting)
			}
			time.Sleep(waitStep)
			wait -= waitStep
			continue
		}
		passes = append(passes, rec.writes)
		if r.conflict && plugins.IsTerminal(err) && plugins.ReasonOf(err, "") == plugins.ReasonConflict {
			return passes, nil // a host runs it again when something changes, not at once
		}
		if revoking && err == nil && r.waiting == "" {
			return passes, nil
		}
		if len(rec.writes) == 0 {
			switch {
			case r.conflict:
				if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonConflict {
					return passes, fmt.Errorf("the pass that wrote nothing ended with %v, not with a terminal %s", err, plugins.ReasonConflict)
				}
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

// maxWait bounds how long a run to quiet waits for another controller
// (kube-controller-manager, say) that a pass says it waits for, polling
// every waitStep.
const (
	maxWait  = 30 * time.Second
	waitStep = 200 * time.Millisecond
)
