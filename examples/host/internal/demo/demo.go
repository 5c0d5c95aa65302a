// Package demo runs the host's plugins on a local control plane and narrates
// what they do: it starts kube-apiserver and etcd with envtest, installs the
// CRDs, runs every enabled plugin in-process, creates the sample Profiles,
// then changes and deletes some of them and shows how the controllers answer.
// Serve (`profilekit local`) keeps the same set-up running instead, with
// kube-controller-manager and the tenant page, until it is stopped.
//
// envtest runs no controllers of its own: no namespace controller and no
// garbage collector. The demo (not Serve) starts from Profiles alone: the core plugin
// makes each namespace (without core in the configuration, the demo makes
// them as the upstream controller would), and when a Profile is deleted it shows the owner references that a real
// cluster's garbage collector would act on, rather than pretending.
package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
)

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

// defaultTimeout bounds each wait for the controllers unless Options.Timeout
// says otherwise.
const defaultTimeout = 30 * time.Second

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
		o.Timeout = defaultTimeout
	}
	d := &demo{Options: o}
	profiles, err := d.readProfiles()
	if err != nil {
		return err
	}
	d.title("profilekit demo")
	d.printf("configuration: %s\n", o.ConfigName)
	d.printf("sample Profiles: %s (%d)\n", o.ProfilesDir, len(profiles))

	cp, err := local.StartControlPlane(ctx, local.Options{
		Config: o.Config, Registry: o.Registry, RepoRoot: o.RepoRoot, AssetsDir: o.AssetsDir, Out: o.Out,
	})
	if err != nil {
		return err
	}
	d.Config, d.defs, d.scheme = cp.Config, cp.Definitions, cp.Scheme
	env := cp.Env
	defer func() {
		d.printf("\nstopping the control plane\n")
		if err := env.Stop(); err != nil {
			d.printf("  stop: %v\n", err)
		}
	}()
	c, err := client.New(env.Config, client.Options{Scheme: d.scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	d.c = c

	host, err := local.StartHost(ctx, env.Config, d.Config, d.Registry, d.Logger)
	if err != nil {
		return err
	}
	defer func() {
		if err := host.Stop(); err != nil {
			d.printf("host: %v\n", err)
		}
	}()
	d.printf("host running: one controller per plugin (%s)\n", strings.Join(d.Config.Enabled(), ", "))

	if err := d.createSources(ctx, "0. Create the replicate plugin's sources"); err != nil {
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
