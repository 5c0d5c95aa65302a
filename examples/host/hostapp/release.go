package hostapp

// This file holds the release command: the way back from the host to the
// upstream profile controller.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/progress"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

type releaseFlags struct {
	config     string
	kubeconfig string
	dryRun     bool
	force      bool
}

func newReleaseCommand(app App, g *globals) *cobra.Command {
	f := &releaseFlags{}
	cmd := &cobra.Command{
		Use:   "release --config host.yaml",
		Short: "Hand the Profiles back to the upstream profile controller (the host stopped)",
		Long: `release takes what profilekit keeps on the Profiles off them, so that the
upstream Kubeflow profile controller serves them alone again: with the host
stopped, for every Profile of the host's shard it removes

  - profilekit's conditions (Ready, FinalizerHandOver and the <Kind>Ready
    of every plugin compiled into this binary; upstream's own conditions
    stay),
  - the annotations with which the host records that it handed the
    upstream finalizer over (profilekit.dev/finalizer-handed-over,
    profilekit.dev/finalizer-returns),
  - profilekit's finalizers (profilekit.dev/<kind>): the plugins no longer
    run, and a Profile would never finish deleting; state a plugin keeps
    outside the cluster (a bucket, a database, a cloud grant) is no longer
    cleaned up when the Profile is deleted, and each one is named,

and puts the upstream controller's profile-finalizer back on each Profile
that the core plugin serves or served and that is not being deleted, so
that its cleanup is guarded before the upstream controller runs again.
Objects in the namespaces stay as they are: the upstream controller updates
them in place and ignores profilekit's labels.

release refuses to run while a host holds the configuration's Lease
(leaderElection.id): a running host would write its conditions back. Stop
the host first; a host stopped gracefully releases the Lease at once.

Each write is guarded by the Profile's resource version; running release
again changes nothing.`,
		Example: `  profilekit release --config /etc/profilekit/host.yaml --dry-run
  profilekit release --config host.yaml --kubeconfig ~/.kube/prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, reg, err := loadConfig(app, f.config)
			if err != nil {
				return err
			}
			s, err := server.NewScheme()
			if err != nil {
				return err
			}
			c, err := clusterClient(f.kubeconfig, s)
			if err != nil {
				return err
			}
			if !f.force {
				if err := hostStopped(cmd.Context(), c, cfg, f.config); err != nil {
					return err
				}
			}
			bar := func(total int) *progress.Bar { return g.progress(cmd, "Profiles", total) }
			return release(cmd.Context(), c, cfg, releaseRules(cfg, reg), f.dryRun, cmd.OutOrStdout(), bar)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "host configuration file (required): its shard, Lease and plugins")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster; empty uses $KUBECONFIG, the in-cluster service account, then ~/.kube/config")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would change, change nothing")
	fl.BoolVar(&f.force, "force", false, "skip the check that no host holds the Lease")
	return cmd
}

// hostStopped fails while a host holds the configuration's Lease.
func hostStopped(ctx context.Context, c client.Reader, cfg *hostconfig.Config, path string) error {
	ns := cfg.HostNamespace()
	if ns == "" {
		return fmt.Errorf("%s: leaderElection.namespace: empty, and outside a cluster release cannot tell where the host's Lease is; set it, or pass --force once the host is stopped", path)
	}
	var lease coordinationv1.Lease
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: cfg.LeaderElection.ID}, &lease)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the host's Lease %s/%s: %w", ns, cfg.LeaderElection.ID, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" || lease.Spec.RenewTime == nil {
		return nil
	}
	duration, _, _ := cfg.LeaderElection.Timings()
	if lease.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	if until := lease.Spec.RenewTime.Add(duration); time.Now().Before(until) {
		return fmt.Errorf("the host still runs: its Lease %s/%s is held by %s until %s; stop it first (a host stopped gracefully releases the Lease), then run release again",
			ns, cfg.LeaderElection.ID, holder, until.UTC().Format(time.RFC3339))
	}
	return nil
}

// releaseRule says what release takes off a Profile and puts on it.
type releaseRule struct {
	// conditions are the condition types profilekit writes.
	conditions []string
	// coreServes reports whether the host's core plugin serves a Profile,
	// nil when the binary has no core plugin.
	coreServes func(p *kubeflowv1.Profile) bool
}

// releaseRules returns the rule for the binary's plugins and the host's
// configuration.
func releaseRules(cfg *hostconfig.Config, reg *plugins.Registry) releaseRule {
	rule := releaseRule{conditions: []string{plugins.ConditionReady, reconcilers.ConditionFinalizerHandOver}}
	for _, d := range reg.Definitions() {
		rule.conditions = append(rule.conditions, d.Condition())
	}
	if d, ok := reg.Get(core.Kind); ok {
		sec, _ := cfg.Section(core.Kind)
		cond := d.Condition()
		rule.coreServes = func(p *kubeflowv1.Profile) bool {
			return sec.Applies(plugins.Listed(p, core.Kind), p.Labels) || plugins.FindCondition(p.Status.Conditions, cond) != nil
		}
	}
	return rule
}

// releasePlan is what release changes on one Profile.
type releasePlan struct {
	conditions  []string // removed
	finalizers  []string // removed
	annotations []string // removed
	upstream    bool     // core.UpstreamFinalizer added
}

// handOverAnnotations are the annotations with which the host records a
// hand-over of the upstream finalizer.
var handOverAnnotations = []string{reconcilers.AnnotationHandedOver, reconcilers.AnnotationFinalizerReturns}

func (r releasePlan) empty() bool {
	return len(r.conditions) == 0 && len(r.finalizers) == 0 && len(r.annotations) == 0 && !r.upstream
}

// plan returns what release changes on p.
func (rule releaseRule) plan(p *kubeflowv1.Profile) releasePlan {
	var out releasePlan
	for _, c := range p.Status.Conditions {
		if slices.Contains(rule.conditions, c.Type) {
			out.conditions = append(out.conditions, c.Type)
		}
	}
	for _, f := range p.Finalizers {
		if strings.HasPrefix(f, plugins.FinalizerPrefix) {
			out.finalizers = append(out.finalizers, f)
		}
	}
	for _, a := range handOverAnnotations {
		if _, ok := p.Annotations[a]; ok {
			out.annotations = append(out.annotations, a)
		}
	}
	out.upstream = rule.coreServes != nil && rule.coreServes(p) && p.DeletionTimestamp.IsZero() &&
		!controllerutil.ContainsFinalizer(p, core.UpstreamFinalizer)
	return out
}

// release changes every Profile of the host's shard as its plan says, and
// prints what it changed (or, with dryRun, would change) to out, with the
// progress line that bar starts for the number of Profiles.
func release(ctx context.Context, c client.Client, cfg *hostconfig.Config, rule releaseRule, dryRun bool, out io.Writer, bar func(total int) *progress.Bar) error {
	var list kubeflowv1.ProfileList
	if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: cfg.Shard()}); err != nil {
		return fmt.Errorf("list Profiles: %w", err)
	}
	line := bar(len(list.Items))
	defer line.Done()
	out = line.Above(out)
	verb := "released"
	if dryRun {
		verb = "would release"
	}
	var errs []error
	changed := 0
	for i := range list.Items {
		p := &list.Items[i]
		did, err := releasePlanned(ctx, c, rule, p, dryRun, out)
		if did {
			changed++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("profile %s: %w", p.Name, err))
		}
		line.Add(1)
	}
	line.Done()
	fmt.Fprintf(out, "%s %d of %d Profiles; the others carry nothing of profilekit's\n", verb, changed, len(list.Items))
	return errors.Join(errs...)
}

// releasePlanned prints p's warnings and plan to out and, unless dryRun,
// carries the plan out; it reports whether p had anything to release.
func releasePlanned(ctx context.Context, c client.Client, rule releaseRule, p *kubeflowv1.Profile, dryRun bool, out io.Writer) (bool, error) {
	for _, w := range wayBackWarnings(p) {
		fmt.Fprintf(out, "warning: profile %s: %s\n", p.Name, w)
	}
	plan := rule.plan(p)
	if plan.empty() {
		return false, nil
	}
	fmt.Fprintf(out, "profile %s: %s\n", p.Name, plan)
	for _, f := range plan.finalizers {
		fmt.Fprintf(out, "  %s removed: the plugin %s no longer cleans up what it keeps outside the cluster for this Profile when it is deleted\n",
			f, strings.TrimPrefix(f, plugins.FinalizerPrefix))
	}
	if dryRun {
		return true, nil
	}
	return true, releaseOne(ctx, c, rule, p.Name)
}

// String says what the plan changes.
func (r releasePlan) String() string {
	var parts []string
	if len(r.conditions) > 0 {
		parts = append(parts, "remove conditions "+strings.Join(r.conditions, ", "))
	}
	if len(r.finalizers) > 0 {
		parts = append(parts, "remove finalizers "+strings.Join(r.finalizers, ", "))
	}
	if len(r.annotations) > 0 {
		parts = append(parts, "remove annotations "+strings.Join(r.annotations, ", "))
	}
	if r.upstream {
		parts = append(parts, "add finalizer "+core.UpstreamFinalizer)
	}
	return strings.Join(parts, "; ")
}

// releaseOne applies the plan to the Profile named name as it is now: its
// conditions through the status subresource, its finalizers with a merge
// patch, each guarded by the resource version and tried again on a
// conflict with a fresh read.
func releaseOne(ctx context.Context, c client.Client, rule releaseRule, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p kubeflowv1.Profile
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return client.IgnoreNotFound(err)
		}
		plan := rule.plan(&p)
		if len(plan.conditions) > 0 {
			p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c kubeflowv1.ProfileCondition) bool {
				return slices.Contains(plan.conditions, c.Type)
			})
			if err := c.Status().Update(ctx, &p); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		if len(plan.finalizers) == 0 && len(plan.annotations) == 0 && !plan.upstream {
			return nil
		}
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return slices.Contains(plan.finalizers, f) })
		for _, a := range plan.annotations {
			delete(p.Annotations, a)
		}
		if plan.upstream {
			controllerutil.AddFinalizer(&p, core.UpstreamFinalizer)
		}
		return client.IgnoreNotFound(c.Patch(ctx, &p, patch))
	})
}
