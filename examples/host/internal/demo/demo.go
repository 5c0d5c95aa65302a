// Package demo runs the host's plugins on a local control plane and narrates
// what they do: it starts kube-apiserver and etcd with envtest, installs the
// CRDs, runs every enabled plugin in-process, creates the sample Profiles,
// then changes and deletes some of them and shows how the controllers answer.
//
// envtest runs no controllers of its own: no namespace controller and no
// garbage collector. The demo starts from Profiles alone: the core plugin
// makes each namespace (without core in the configuration, the demo makes
// them as the upstream controller would), and when a Profile is deleted it shows the owner references that a real
// cluster's garbage collector would act on, rather than pretending.
package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// AssetsVersion names the folder under bin/k8s that `make envtest-assets`
// fills with kube-apiserver and etcd. It follows the Makefile and
// internal/testenv (a test keeps them in step).
const AssetsVersion = "1.36.3-etcd3.6.6"

// Options configure a demo run.
type Options struct {
	// Config is the host configuration the plugins run with, and ConfigName
	// names it in the output.
	Config     *hostconfig.Config
	ConfigName string
	// Registry holds the plugins built in.
	Registry *plugins.Registry
	// RepoRoot is the profilekit source tree, where bin/ and examples/ are.
	RepoRoot string
	// AssetsDir holds kube-apiserver and etcd.
	AssetsDir string
	// ProfilesDir holds the sample Profiles (*.yaml).
	ProfilesDir string
	// Out receives the narration.
	Out io.Writer
	// Logger receives the controllers' logs.
	Logger logr.Logger
	// Timeout bounds each wait for the controllers. Default 30s.
	Timeout time.Duration
}

// demo is one run's state.
type demo struct {
	Options
	c      client.Client
	scheme *runtime.Scheme
	defs   []plugins.Definition
}

// Run runs the demo. It returns an error when a step does not happen as the
// narration says it should.
func Run(ctx context.Context, o Options) error {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	d := &demo{Options: o}
	profiles, err := d.readProfiles()
	if err != nil {
		return err
	}
	d.title("profilekit demo")
	d.printf("configuration: %s\n", o.ConfigName)
	d.printf("sample Profiles: %s (%d)\n", o.ProfilesDir, len(profiles))

	s, err := server.NewScheme()
	if err != nil {
		return err
	}
	d.scheme = s
	crds, err := d.selectPlugins(ctx)
	if err != nil {
		return err
	}

	env, err := d.startControlPlane(crds)
	if err != nil {
		return err
	}
	defer func() {
		d.printf("\nstopping the control plane\n")
		if err := env.Stop(); err != nil {
			d.printf("  stop: %v\n", err)
		}
	}()
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	d.c = c

	stop, err := d.startHost(ctx, env)
	if err != nil {
		return err
	}
	defer stop()

	if err := d.createSources(ctx); err != nil {
		return err
	}
	d.title("1. Create the sample Profiles")
	for _, p := range profiles {
		if err := d.create(ctx, p); err != nil {
			return err
		}
	}
	for _, p := range profiles {
		if err := d.waitSettled(ctx, p.Name); err != nil {
			return err
		}
	}
	for _, p := range profiles {
		if err := d.show(ctx, p.Name); err != nil {
			return err
		}
	}

	if err := d.overrideLabel(ctx, profiles); err != nil {
		return err
	}
	if err := d.repairDrift(ctx, profiles[0].Name); err != nil {
		return err
	}
	if err := d.rotateSource(ctx, profiles); err != nil {
		return err
	}
	if err := d.optOut(ctx, profiles); err != nil {
		return err
	}
	if err := d.optOutByLabel(ctx, profiles); err != nil {
		return err
	}
	if err := d.deleteProfile(ctx, profiles[len(profiles)-1].Name); err != nil {
		return err
	}
	d.title("Done")
	d.printf("every step behaved as described; the demo leaves nothing behind (the control plane is temporary)\n")
	return nil
}

// ControlPlane is a started local control plane with the CRDs that a host
// configuration's plugins need.
type ControlPlane struct {
	// Env is the running kube-apiserver and etcd; Env.Config reaches them
	// as an administrator, and Env.Stop stops them.
	Env *envtest.Environment
	// Config is the host configuration, less (with a note on Out) any plugin
	// whose CRDs could not be found.
	Config *hostconfig.Config
	// Definitions are the plugins that Config runs.
	Definitions []plugins.Definition
}

// StartControlPlane starts kube-apiserver and etcd and installs the Profile
// CRD and the CRDs of the plugins o.Config enables, as the demo does, for
// other commands that need a real control plane (the benchmark). It uses
// o.Config, o.Registry, o.RepoRoot, o.AssetsDir and o.Out; the caller stops
// the control plane with Env.Stop.
func StartControlPlane(ctx context.Context, o Options) (*ControlPlane, error) {
	d := &demo{Options: o}
	s, err := server.NewScheme()
	if err != nil {
		return nil, err
	}
	d.scheme = s
	crds, err := d.selectPlugins(ctx)
	if err != nil {
		return nil, err
	}
	env, err := d.startControlPlane(crds)
	if err != nil {
		return nil, err
	}
	return &ControlPlane{Env: env, Config: d.Config, Definitions: d.defs}, nil
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.Out, format, args...) }

func (d *demo) title(s string) { d.printf("\n== %s\n", s) }

func (d *demo) readProfiles() ([]*kubeflowv1.Profile, error) {
	files, err := filepath.Glob(filepath.Join(d.ProfilesDir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("sample Profiles: %w", err)
	}
	var out []*kubeflowv1.Profile
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("sample Profiles: %w", err)
		}
		ps, err := render.ReadProfiles(r, f)
		r.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Profiles in %s/*.yaml", d.ProfilesDir)
	}
	return out, nil
}

// selectPlugins finds the CRDs the enabled plugins need and leaves out, with a
// note, any plugin whose CRDs the demo cannot install.
func (d *demo) selectPlugins(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	pc, err := profileCRD()
	if err != nil {
		return nil, err
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{pc}
	seen := map[string]bool{pc.Name: true}
	src := &crdSource{repoRoot: d.RepoRoot}
	cfg := *d.Config
	cfg.Plugins = maps.Clone(d.Config.Plugins)
	for _, kind := range d.Config.Enabled() {
		def, ok := d.Registry.Get(kind)
		if !ok {
			return nil, fmt.Errorf("plugin %s: not built into this host", kind)
		}
		var need []*apiextensionsv1.CustomResourceDefinition
		var missing error
		for _, gvk := range kinds(def, d.scheme) {
			if builtIn(gvk) {
				continue
			}
			c, err := src.find(ctx, gvk.GroupKind())
			if err != nil {
				missing = err
				break
			}
			need = append(need, c)
		}
		if missing != nil {
			d.printf("note: plugin %s left out of the demo: %v\n", kind, missing)
			sec := cfg.Plugins[kind]
			sec.Enabled = hostconfig.EnabledOff
			cfg.Plugins[kind] = sec
			continue
		}
		for _, c := range need {
			if !seen[c.Name] {
				seen[c.Name] = true
				crds = append(crds, c)
			}
		}
		d.defs = append(d.defs, def)
	}
	if len(d.defs) == 0 {
		return nil, errors.New("no plugin left to run")
	}
	d.Config = &cfg
	names := make([]string, 0, len(crds))
	for _, c := range crds {
		names = append(names, c.Name)
	}
	d.printf("plugins: %s\n", strings.Join(d.Config.Enabled(), ", "))
	d.printf("CRDs to install: %s\n", strings.Join(names, ", "))
	return crds, nil
}

// startControlPlane starts kube-apiserver and etcd, showing progress while
// they come up.
func (d *demo) startControlPlane(crds []*apiextensionsv1.CustomResourceDefinition) (*envtest.Environment, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(d.AssetsDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make envtest-assets` (it builds kube-apiserver and etcd from source), or point KUBEBUILDER_ASSETS at a folder that has them", bin, d.AssetsDir)
		}
	}
	d.title("Starting a local control plane")
	d.printf("kube-apiserver and etcd from %s\n", d.AssetsDir)
	env := &envtest.Environment{
		BinaryAssetsDirectory: d.AssetsDir,
		CRDs:                  crds,
		Scheme:                d.scheme,
	}
	start := time.Now()
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d.printf("  ... starting (%s)\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	_, err := env.Start()
	close(done)
	<-ticked
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	d.printf("control plane up in %s at %s, %d CRDs installed\n", time.Since(start).Round(100*time.Millisecond), env.Config.Host, len(crds))
	return env, nil
}

// startHost runs the host's manager in-process, as `profilekit run` would,
// without leader election, metrics or probes.
func (d *demo) startHost(ctx context.Context, env *envtest.Environment) (func(), error) {
	mgr, err := server.NewManager(env.Config, d.Config, d.Registry, server.Options{
		MetricsAddr:        "0",
		ProbeAddr:          "0",
		Logger:             d.Logger,
		SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(log.IntoContext(ctx, d.Logger))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			d.printf("host: %v\n", err)
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return nil, errors.New("the host's caches did not sync")
	}
	d.printf("host running: one controller per plugin (%s)\n", strings.Join(d.Config.Enabled(), ", "))
	return stop, nil
}

// create creates a Profile. Its namespace is the core plugin's to make; a
// configuration without core gets the namespace made here, as the upstream
// controller would make it in a cluster.
func (d *demo) create(ctx context.Context, p *kubeflowv1.Profile) error {
	if _, on := d.Config.Section(core.Kind); !on {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}
		if err := d.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", p.Name, err)
		}
	}
	obj := p.DeepCopy()
	if err := d.c.Create(ctx, obj); err != nil {
		return fmt.Errorf("create Profile %s: %w", p.Name, err)
	}
	var listed []string
	for _, e := range p.Spec.Plugins {
		listed = append(listed, e.Kind)
	}
	d.printf("created Profile %s (namespace %s; lists %s)\n", p.Name, p.Name, orNone(listed))
	return nil
}

// applying returns the enabled plugins that serve p.
func (d *demo) applying(p *kubeflowv1.Profile) []plugins.Definition {
	var out []plugins.Definition
	if !d.Config.InShard(p.Labels) {
		return nil
	}
	for _, def := range d.defs {
		sec, on := d.Config.Section(def.Kind())
		if on && sec.Applies(plugins.Listed(p, def.Kind()), p.Labels) {
			out = append(out, def)
		}
	}
	return out
}

func (d *demo) get(ctx context.Context, name string) (*kubeflowv1.Profile, error) {
	var p kubeflowv1.Profile
	if err := d.c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
		return nil, fmt.Errorf("get Profile %s: %w", name, err)
	}
	return &p, nil
}

// eventually polls cond until it holds or the timeout passes; the error then
// says what was awaited and the last state seen.
func (d *demo) eventually(ctx context.Context, what string, cond func(context.Context) (bool, string, error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d.Timeout, true, func(ctx context.Context) (bool, error) {
		ok, state, err := cond(ctx)
		last = state
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("%s: not seen within %s (last: %s): %w", what, d.Timeout, last, err)
	}
	return nil
}

// waitSettled waits until every plugin that serves the Profile has reported
// its condition.
func (d *demo) waitSettled(ctx context.Context, name string) error {
	return d.eventually(ctx, "conditions of Profile "+name, func(ctx context.Context) (bool, string, error) {
		p, err := d.get(ctx, name)
		if err != nil {
			return false, "", err
		}
		var missing []string
		for _, def := range d.applying(p) {
			if plugins.FindCondition(p.Status.Conditions, def.Condition()) == nil {
				missing = append(missing, def.Condition())
			}
		}
		return len(missing) == 0, "waiting for " + strings.Join(missing, ", "), nil
	})
}

// show prints a Profile's plugin conditions and the objects the plugins wrote.
func (d *demo) show(ctx context.Context, name string) error {
	p, err := d.get(ctx, name)
	if err != nil {
		return err
	}
	d.printf("\nProfile %s  owner %s  labels %s\n", p.Name, p.Spec.Owner.Name, labelString(p.Labels))
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PLUGIN\tCONDITION\tSTATUS\tMESSAGE")
	applying := d.applying(p)
	for _, def := range d.defs {
		c := plugins.FindCondition(p.Status.Conditions, def.Condition())
		switch {
		case c != nil:
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", def.Kind(), c.Type, c.Status, c.Message)
		case slices.ContainsFunc(applying, func(a plugins.Definition) bool { return a.Kind() == def.Kind() }):
			fmt.Fprintf(tw, "  %s\t%s\t-\tnot reported yet\n", def.Kind(), def.Condition())
		default:
			fmt.Fprintf(tw, "  %s\t-\t-\tdoes not apply to this Profile\n", def.Kind())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	objs, err := d.owned(ctx, p.Name)
	if err != nil {
		return err
	}
	d.printObjects(objs)
	return nil
}

func (d *demo) printObjects(objs []ownedObject) {
	if len(objs) == 0 {
		d.printf("  (no objects)\n")
		return
	}
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OBJECT\tPLUGIN\tDETAILS")
	for _, o := range objs {
		fmt.Fprintf(tw, "  %s %s/%s\t%s\t%s\n", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName(), o.plugin, describe(o.u))
	}
	_ = tw.Flush()
}

type ownedObject struct {
	plugin string
	u      *unstructured.Unstructured
}

// owned lists, straight from the API server, every object a plugin wrote for
// the Profile, found by profilekit's labels.
func (d *demo) owned(ctx context.Context, profile string) ([]ownedObject, error) {
	var out []ownedObject
	for _, def := range d.defs {
		for _, gvk := range def.Owns {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			sel := client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(def.Kind(), profile)}
			if err := d.c.List(ctx, list, sel); err != nil {
				return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
			}
			for i := range list.Items {
				out = append(out, ownedObject{plugin: def.Kind(), u: &list.Items[i]})
			}
		}
	}
	slices.SortFunc(out, func(a, b ownedObject) int {
		return strings.Compare(a.u.GetKind()+"/"+a.u.GetNamespace()+"/"+a.u.GetName(), b.u.GetKind()+"/"+b.u.GetNamespace()+"/"+b.u.GetName())
	})
	return out, nil
}

// events returns the Events about a Profile, oldest first, as "Type Reason: note".
func (d *demo) events(ctx context.Context, profile string, reasons ...string) ([]string, error) {
	var list eventsv1.EventList
	if err := d.c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	items := slices.Clone(list.Items)
	slices.SortStableFunc(items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range items {
		if e.Regarding.Kind != "Profile" || e.Regarding.Name != profile {
			continue
		}
		if len(reasons) > 0 && !slices.Contains(reasons, e.Reason) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (%s): %s", e.Type, e.Reason, e.ReportingController, e.Note))
	}
	return out, nil
}

// overrideLabel raises a Profile's quota with a label, then shows what a bad
// label does: the condition says which label, and the quota stays as it was.
func (d *demo) overrideLabel(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	d.title("2. Override a quota with a Profile label")
	def, ok := d.def(quotas.Kind)
	if !ok {
		d.printf("the quotas plugin is not enabled; nothing to show\n")
		return nil
	}
	sec, _ := d.Config.Section(quotas.Kind)
	raw, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		return err
	}
	qc, _ := raw.(*quotas.Config)
	if qc == nil || qc.LabelPrefix == "" {
		d.printf("the quotas configuration has no labelPrefix; label overrides are off\n")
		return nil
	}
	var target *kubeflowv1.Profile
	for _, p := range profiles {
		if slices.ContainsFunc(d.applying(p), func(x plugins.Definition) bool { return x.Kind() == quotas.Kind }) {
			target = p
			break
		}
	}
	if target == nil {
		d.printf("no sample Profile gets a quota; nothing to show\n")
		return nil
	}
	key := qc.LabelPrefix + "/limits.cpu"
	value := "32"
	if c, ok := qc.Caps["limits.cpu"]; ok && c.CmpInt64(32) < 0 {
		value = c.String()
	}
	before, err := d.quotaHard(ctx, target.Name, qc.Name)
	if err != nil {
		return err
	}
	d.printf("Profile %s: set label %s=%s (quota now: %s)\n", target.Name, key, value, before)
	if err := d.setLabel(ctx, target.Name, key, value); err != nil {
		return err
	}
	var after string
	err = d.eventually(ctx, "quota limits.cpu="+value, func(ctx context.Context) (bool, string, error) {
		after, err = d.quotaHard(ctx, target.Name, qc.Name)
		return strings.Contains(after, "limits.cpu="+value+" ") || strings.HasSuffix(after, "limits.cpu="+value), after, err
	})
	if err != nil {
		return err
	}
	d.printf("  -> ResourceQuota %s/%s updated in place: %s\n", target.Name, qc.Name, after)

	bad := qc.LabelPrefix + "/limits.memory"
	d.printf("Profile %s: set a label that is not a quantity, %s=lots\n", target.Name, bad)
	if err := d.setLabel(ctx, target.Name, bad, "lots"); err != nil {
		return err
	}
	cond, err := d.waitCondition(ctx, target.Name, def.Condition(), plugins.ConditionFalse)
	if err != nil {
		return err
	}
	still, err := d.quotaHard(ctx, target.Name, qc.Name)
	if err != nil {
		return err
	}
	d.printf("  -> %s\n  -> the quota is left as it was: %s\n", cond, still)
	if evs, err := d.events(ctx, target.Name, plugins.ReasonInvalidLabel); err == nil && len(evs) > 0 {
		d.printf("  -> Event: %s\n", evs[len(evs)-1])
	}
	d.printf("Profile %s: remove the bad label\n", target.Name)
	if err := d.setLabel(ctx, target.Name, bad, ""); err != nil {
		return err
	}
	cond, err = d.waitCondition(ctx, target.Name, def.Condition(), plugins.ConditionTrue)
	if err != nil {
		return err
	}
	d.printf("  -> %s\n", cond)
	return nil
}

// repairDrift deletes one of a Profile's objects by hand and times how long
// the plugin takes to put it back: it watches its own objects, so it does
// not wait for the resync.
func (d *demo) repairDrift(ctx context.Context, name string) error {
	d.title("3. Repair a hand edit")
	objs, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		d.printf("Profile %s has no objects; nothing to show\n", name)
		return nil
	}
	victim := objs[0]
	u := victim.u
	d.printf("delete %s %s/%s (written by %s) by hand\n", u.GetKind(), u.GetNamespace(), u.GetName(), victim.plugin)
	start := time.Now()
	uid := u.GetUID()
	if err := d.c.Delete(ctx, u, client.Preconditions{UID: &uid}); err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	err = d.eventually(ctx, u.GetKind()+" back", func(ctx context.Context) (bool, string, error) {
		back := &unstructured.Unstructured{}
		back.SetGroupVersionKind(u.GroupVersionKind())
		err := d.c.Get(ctx, client.ObjectKeyFromObject(u), back)
		if apierrors.IsNotFound(err) {
			return false, "not yet", nil
		}
		if err != nil {
			return false, "", err
		}
		return back.GetUID() != uid, "uid " + string(back.GetUID()), nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> %s put it back in %s (a new object; the resync period is %s)\n", victim.plugin, time.Since(start).Round(time.Millisecond), d.Config.Resync())
	return nil
}

func (d *demo) def(kind string) (plugins.Definition, bool) {
	for _, def := range d.defs {
		if def.Kind() == kind {
			return def, true
		}
	}
	return plugins.Definition{}, false
}

func (d *demo) quotaHard(ctx context.Context, ns, name string) (string, error) {
	var rq corev1.ResourceQuota
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rq); err != nil {
		return "", fmt.Errorf("get ResourceQuota %s/%s: %w", ns, name, err)
	}
	return resourceList(rq.Spec.Hard), nil
}

// setLabel sets (or, with an empty value, removes) one label with a merge
// patch, as a person or a GitOps tool would.
func (d *demo) setLabel(ctx context.Context, name, key, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := d.c.Patch(ctx, p, client.RawPatch("application/merge-patch+json", mustJSON(patch))); err != nil {
		return fmt.Errorf("label Profile %s: %w", name, err)
	}
	return nil
}

// optOut removes a plugin from a Profile that lists it, where the host serves
// only listing Profiles, and shows the plugin's Revoke.
func (d *demo) optOut(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	d.title("4. Opt a Profile out of a plugin it lists")
	var target *kubeflowv1.Profile
	var def plugins.Definition
	for _, p := range profiles {
		for _, x := range d.applying(p) {
			sec, _ := d.Config.Section(x.Kind())
			if sec.Enabled == hostconfig.EnabledListed && plugins.Listed(p, x.Kind()) {
				target, def = p, x
				break
			}
		}
		if target != nil {
			break
		}
	}
	if target == nil {
		d.printf("no sample Profile lists a plugin that the configuration enables as listed; nothing to show\n")
		return nil
	}
	what := fmt.Sprintf("remove %s from spec.plugins (the host runs it with enabled: listed)", def.Kind())
	err := d.revokeBy(ctx, target.Name, def, what, func() error {
		p, err := d.get(ctx, target.Name)
		if err != nil {
			return err
		}
		before := p.DeepCopy()
		p.Spec.Plugins = slices.DeleteFunc(p.Spec.Plugins, func(e kubeflowv1.Plugin) bool { return e.Kind == def.Kind() })
		if err := d.c.Patch(ctx, p, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("update Profile %s: %w", target.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return d.show(ctx, target.Name)
}

// optOutByLabel sets the label that a plugin's selector excludes (enabled:
// all with a NotIn or DoesNotExist expression) on a Profile the plugin
// serves without being listed, and shows the plugin's Revoke.
func (d *demo) optOutByLabel(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	d.title("5. Opt a Profile out of a plugin enabled for all, by label")
	for _, p := range profiles {
		for _, def := range d.applying(p) {
			sec, _ := d.Config.Section(def.Kind())
			if sec.Enabled != hostconfig.EnabledAll || sec.Selector == nil || plugins.Listed(p, def.Kind()) {
				continue
			}
			key, value, ok := excludingLabel(sec.Selector)
			if !ok {
				continue
			}
			return d.revokeBy(ctx, p.Name, def, fmt.Sprintf("set label %s=%s, which the %s selector excludes", key, value, def.Kind()), func() error {
				return d.setLabel(ctx, p.Name, key, value)
			})
		}
	}
	d.printf("no plugin enabled for all has a selector that a label can opt out of; nothing to show\n")
	return nil
}

// excludingLabel returns a label that the selector does not match.
func excludingLabel(sel *metav1.LabelSelector) (string, string, bool) {
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpNotIn:
			if len(e.Values) > 0 {
				return e.Key, e.Values[0], true
			}
		case metav1.LabelSelectorOpDoesNotExist:
			return e.Key, "true", true
		}
	}
	return "", "", false
}

// revokeBy shows a plugin's objects for a Profile, makes the change, waits
// until the plugin has revoked itself, and shows the Events.
func (d *demo) revokeBy(ctx context.Context, name string, def plugins.Definition, what string, change func() error) error {
	objs, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	d.printf("Profile %s: %s objects now:\n", name, def.Kind())
	d.printObjects(filterPlugin(objs, def.Kind()))
	d.printf("Profile %s: %s\n", name, what)
	seen, err := d.events(ctx, name, plugins.ReasonRevoked)
	if err != nil {
		return err
	}
	if err := change(); err != nil {
		return err
	}
	err = d.eventually(ctx, def.Kind()+" revoked", func(ctx context.Context) (bool, string, error) {
		p, err := d.get(ctx, name)
		if err != nil {
			return false, "", err
		}
		objs, err := d.owned(ctx, name)
		if err != nil {
			return false, "", err
		}
		left := len(filterPlugin(objs, def.Kind()))
		c := plugins.FindCondition(p.Status.Conditions, def.Condition())
		return left == 0 && c == nil, fmt.Sprintf("%d objects left, condition %v", left, c), nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> Revoke deleted the plugin's objects and removed %s from the Profile's status\n", def.Condition())
	evs, err := d.events(ctx, name, plugins.ReasonRevoked)
	if err != nil {
		return err
	}
	for _, e := range evs[min(len(seen), len(evs)):] {
		d.printf("  -> Event: %s\n", e)
	}
	return nil
}

func filterPlugin(objs []ownedObject, kind string) []ownedObject {
	var out []ownedObject
	for _, o := range objs {
		if o.plugin == kind {
			out = append(out, o)
		}
	}
	return out
}

// deleteProfile deletes a Profile and shows what happens to its objects.
func (d *demo) deleteProfile(ctx context.Context, name string) error {
	d.title("6. Delete a Profile")
	p, err := d.get(ctx, name)
	if err != nil {
		return err
	}
	objs, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	d.printf("Profile %s (uid %s) has %d objects from profilekit; finalizers: %s\n", name, p.UID, len(objs), orNone(p.Finalizers))
	seen, err := d.events(ctx, name, plugins.ReasonRevoked)
	if err != nil {
		return err
	}
	if err := d.c.Delete(ctx, p); err != nil {
		return fmt.Errorf("delete Profile %s: %w", name, err)
	}
	err = d.eventually(ctx, "Profile "+name+" gone", func(ctx context.Context) (bool, string, error) {
		var q kubeflowv1.Profile
		err := d.c.Get(ctx, client.ObjectKey{Name: name}, &q)
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, "finalizers " + orNone(q.Finalizers), nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> the Profile is gone")
	if len(p.Finalizers) > 0 {
		d.printf(" (the plugins with outside state ran Revoke and removed their finalizers)")
	}
	d.printf("\n")
	// Only the Events of this deletion, not those of earlier steps.
	if evs, err := d.events(ctx, name, plugins.ReasonRevoked); err == nil && len(evs) > len(seen) {
		for _, e := range evs[len(seen):] {
			d.printf("  -> Event: %s\n", e)
		}
	}
	left, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	if len(left) == 0 {
		d.printf("  -> no objects left\n")
		return nil
	}
	d.printf("  -> %d objects remain, because this control plane runs no garbage collector.\n", len(left))
	d.printf("     Each points at the deleted Profile; in a cluster the garbage collector deletes them:\n")
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OBJECT\tOWNER REFERENCE")
	for _, o := range left {
		fmt.Fprintf(tw, "  %s %s/%s\t%s\n", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName(), ownerRefs(o.u, p.UID))
	}
	return tw.Flush()
}

func ownerRefs(u *unstructured.Unstructured, uid types.UID) string {
	var parts []string
	for _, r := range u.GetOwnerReferences() {
		id := string(r.UID)
		if len(id) > 8 {
			id = id[:8] + "..."
		}
		s := fmt.Sprintf("%s %s uid=%s", r.Kind, r.Name, id)
		if r.Controller != nil && *r.Controller {
			s += " controller"
		}
		if r.UID == uid {
			s += " (the deleted Profile)"
		}
		parts = append(parts, s)
	}
	return orNone(parts)
}

// describe summarises the kinds whose content the demo's steps change.
func describe(u *unstructured.Unstructured) string {
	switch u.GetKind() {
	case "ResourceQuota":
		hard, _, _ := unstructured.NestedStringMap(u.Object, "spec", "hard")
		return "hard " + mapString(hard)
	case "LimitRange":
		items, _, _ := unstructured.NestedSlice(u.Object, "spec", "limits")
		if len(items) == 0 {
			return ""
		}
		item, _ := items[0].(map[string]any)
		def, _, _ := unstructured.NestedStringMap(item, "default")
		req, _, _ := unstructured.NestedStringMap(item, "defaultRequest")
		return "default " + mapString(def) + "; defaultRequest " + mapString(req)
	case "RoleBinding":
		kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		var who []string
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			who = append(who, fmt.Sprintf("%v:%v", m["kind"], m["name"]))
		}
		return fmt.Sprintf("%s/%s -> %s", kind, name, strings.Join(who, ", "))
	case "Role":
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		return fmt.Sprintf("%d rules", len(rules))
	case "NetworkPolicy":
		types, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "policyTypes")
		return "policyTypes " + strings.Join(types, ",")
	case "AuthorizationPolicy":
		action, _, _ := unstructured.NestedString(u.Object, "spec", "action")
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		return fmt.Sprintf("%s, %d rules", cmp.Or(action, "ALLOW"), len(rules))
	case "VirtualService", "ServiceEntry":
		hosts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "hosts")
		return "hosts " + strings.Join(hosts, ",")
	case "DestinationRule":
		host, _, _ := unstructured.NestedString(u.Object, "spec", "host")
		return "host " + host
	case "Secret":
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		typ, _, _ := unstructured.NestedString(u.Object, "type")
		keys := slices.Sorted(maps.Keys(data))
		return fmt.Sprintf("type %s, keys %s (values not shown)", typ, strings.Join(keys, ","))
	case "ConfigMap":
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		return "keys " + strings.Join(slices.Sorted(maps.Keys(data)), ",")
	case "PodDefault":
		desc, _, _ := unstructured.NestedString(u.Object, "spec", "desc")
		return desc
	}
	return ""
}

func resourceList(l corev1.ResourceList) string {
	m := make(map[string]string, len(l))
	for k, v := range l {
		m[string(k)] = v.String()
	}
	return mapString(m)
}

func mapString(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

func labelString(l map[string]string) string { return mapString(l) }

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func mustJSON(v any) []byte {
	// Maps of strings always encode.
	b, _ := json.Marshal(v)
	return b
}

// waitCondition waits until the Profile's condition of type t has status and
// returns it as "Type=Status \"message\"".
func (d *demo) waitCondition(ctx context.Context, profile, t, status string) (string, error) {
	var cond string
	err := d.eventually(ctx, t+"="+status, func(ctx context.Context) (bool, string, error) {
		p, err := d.get(ctx, profile)
		if err != nil {
			return false, "", err
		}
		c := plugins.FindCondition(p.Status.Conditions, t)
		if c == nil {
			return false, "no condition", nil
		}
		cond = fmt.Sprintf("%s=%s %q", c.Type, c.Status, c.Message)
		return c.Status == status, cond, nil
	})
	return cond, err
}
