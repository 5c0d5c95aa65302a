package demo

// This file holds Serve, `profilekit local`: the demo's set-up kept
// running, with kube-controller-manager and the tenant page, until Ctrl-C.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/plugins"
)

// localAccessTTL is how long the page of a local cluster keeps an answer
// on whether a user may see a namespace, unless the configuration says.
const localAccessTTL = 2 * time.Second

// ServeOptions configure Serve.
type ServeOptions struct {
	Options
	// PageAddress is where the tenant page listens, such as
	// 127.0.0.1:8082.
	PageAddress string
	// As, when set, is the user whom the page takes every request from
	// this machine to come from (local.AsUser); PageAddress must then be a
	// loopback address.
	As string
}

// Serve starts what the demo starts, and kube-controller-manager and the
// tenant page with it, creates the sample Profiles, prints a kubeconfig,
// the page's address and what to try, and keeps everything running until
// ctx ends. It then stops the host, kube-controller-manager and the
// control plane, removes every file it wrote, and returns nil: the end of
// ctx is how it is meant to end.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.As != "" && !local.Loopback(o.PageAddress) {
		return fmt.Errorf("--as needs the page on a loopback address (such as 127.0.0.1:8082), not %s: anyone who reaches it would be %s", o.PageAddress, o.As)
	}
	// A port in use would stop the host after the control plane is up;
	// say so before anything starts.
	ln, err := net.Listen("tcp", o.PageAddress)
	if err != nil {
		return fmt.Errorf("the page's address: %w (choose another with --page-address)", err)
	}
	ln.Close()
	dir, err := os.MkdirTemp("", "profilekit-local-")
	if err != nil {
		return err
	}
	d := &demo{Options: o.Options}
	err = d.serve(ctx, o, dir)
	err = errors.Join(err, os.RemoveAll(dir))
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	if err == nil {
		d.printf("stopped; removed %s, nothing left behind\n", dir)
	}
	return err
}

// serve does Serve's work in dir, and stops everything it started before
// it returns.
func (d *demo) serve(ctx context.Context, o ServeOptions, dir string) (err error) {
	profiles, err := d.readProfiles()
	if err != nil {
		return err
	}
	cfg := *d.Config
	cfg.Page.Enabled, cfg.Page.Address = true, o.PageAddress
	if cfg.Page.AccessTTL == nil {
		// Whom the page lets see a namespace is asked again within
		// seconds, so that a Profile just applied shows at once.
		cfg.Page.AccessTTL = &metav1.Duration{Duration: localAccessTTL}
	}
	d.title("profilekit local")
	d.printf("configuration: %s\n", d.ConfigName)
	d.printf("sample Profiles: %s (%d)\n", d.ProfilesDir, len(profiles))
	cp, err := local.StartControlPlane(ctx, local.Options{
		Config: &cfg, Registry: d.Registry, RepoRoot: d.RepoRoot, AssetsDir: d.AssetsDir, Out: d.Out,
	})
	if err != nil {
		return err
	}
	d.Config, d.defs, d.scheme = cp.Config, cp.Definitions, cp.Scheme
	defer func() {
		d.printf("stopping the control plane\n")
		err = errors.Join(err, cp.Env.Stop())
	}()
	cm, err := local.StartControllerManager(d.AssetsDir, cp.Env, dir)
	if err != nil {
		return err
	}
	defer func() {
		d.printf("stopping kube-controller-manager\n")
		err = errors.Join(err, cm.Stop())
	}()
	d.printf("kube-controller-manager up: garbage collection, namespace deletion, quota use, role aggregation\n")
	if d.c, err = client.New(cp.Env.Config, client.Options{Scheme: d.scheme}); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := local.KubeflowRoles(ctx, d.c); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := local.WriteKubeconfig(cp.Env.Config, kubeconfig); err != nil {
		return err
	}
	var opts []local.HostOption
	if o.As != "" {
		pg := d.Config.Page
		opts = append(opts, local.WithPageWrapper(local.AsUser(pg.UserIDHeader, pg.UserIDPrefix, pg.GroupsHeader, o.As)))
	}
	host, err := local.StartHost(ctx, cp.Env.Config, d.Config, d.Registry, d.Logger, opts...)
	if err != nil {
		return err
	}
	defer func() {
		d.printf("\nstopping the host\n")
		err = errors.Join(err, host.Stop())
	}()
	d.printf("host running: one controller per plugin, and the tenant page on %s\n", o.PageAddress)
	if err := d.createSources(ctx, ""); err != nil {
		return err
	}
	for _, p := range profiles {
		if err := d.create(ctx, p); err != nil {
			return err
		}
	}
	for _, p := range profiles {
		if err := d.waitSettled(ctx, p.Name); err != nil {
			return err
		}
		if err := d.summary(ctx, p.Name); err != nil {
			return err
		}
	}
	d.ready(kubeconfig, o, profiles)
	select {
	case <-ctx.Done():
		return nil
	case <-host.Exited():
		return fmt.Errorf("the host stopped: %w", host.Stop())
	}
}

// summary prints one line for a Profile: how many of the plugins that
// serve it are ready, and what the others say.
func (d *demo) summary(ctx context.Context, name string) error {
	p, err := d.get(ctx, name)
	if err != nil {
		return err
	}
	applying := d.applying(p)
	var notReady []string
	for _, def := range applying {
		if c := plugins.FindCondition(p.Status.Conditions, def.Condition()); c != nil && c.Status != "True" {
			notReady = append(notReady, fmt.Sprintf("%s: %s", def.Kind(), c.Message))
		}
	}
	d.printf("Profile %s (owner %s): %d of %d plugins ready", p.Name, p.Spec.Owner.Name, len(applying)-len(notReady), len(applying))
	if len(notReady) > 0 {
		d.printf("; %s", strings.Join(notReady, "; "))
	}
	d.printf("\n")
	return nil
}

// ready prints how to reach the cluster and the page, and what to try.
func (d *demo) ready(kubeconfig string, o ServeOptions, profiles []*kubeflowv1.Profile) {
	// The lines name a Profile of the --as user's, else one a user owns.
	first, last := profiles[0], profiles[len(profiles)-1]
	if i := slices.IndexFunc(profiles, func(p *kubeflowv1.Profile) bool { return o.As != "" && p.Spec.Owner.Name == o.As }); i >= 0 {
		first = profiles[i]
	} else if i := slices.IndexFunc(profiles, func(p *kubeflowv1.Profile) bool { return p.Spec.Owner.Kind == rbacv1.UserKind }); i >= 0 {
		first = profiles[i]
	}
	pg := d.Config.Page
	url := "http://" + o.PageAddress + "/"
	d.title("Ready")
	d.printf("kubeconfig: %s\n", kubeconfig)
	if o.As != "" {
		d.printf("page:       %s  (from this machine you are %s)\n", url, o.As)
	} else {
		d.printf("page:       %s  (it takes the user from the %s header, as the Kubeflow gateway sets it)\n", url, pg.UserIDHeader)
		d.printf("            curl -H '%s: %s%s' '%s?ns=%s'\n", pg.UserIDHeader, pg.UserIDPrefix, first.Spec.Owner.Name, url, first.Name)
		d.printf("            or start with --as %s to open it in a browser as that user\n", first.Spec.Owner.Name)
	}
	d.printf("\nTry:\n")
	d.printf("  kubectl --kubeconfig %s get profiles\n", kubeconfig)
	d.printf("  kubectl --kubeconfig %s get resourcequotas,rolebindings,networkpolicies -n %s\n", kubeconfig, first.Name)
	d.printf("  kubectl --kubeconfig %s delete profile %s\n", kubeconfig, last.Name)
	d.printf("\nCtrl-C stops everything and removes %s.\n", filepath.Dir(kubeconfig))
}
