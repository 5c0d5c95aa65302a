// Package bench measures the host on a real control plane: how fast it
// converges N Profiles against a plain client creating the same objects,
// how many requests it sends, that a full resync with nothing changed writes
// nothing, how fast it repairs drift, and how much memory it holds before
// and after unrelated Secrets and ConfigMaps fill the cluster.
//
// The host runs in-process, as `profilekit run` would build it
// (server.NewManager), with leader election off and its rest.Config wrapped
// in a counting transport. The control plane is envtest's kube-apiserver and
// etcd, which run as separate processes, so their memory is not the host's.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/plugins"
)

// Options configure a benchmark run.
type Options struct {
	// Config is the host configuration; every plugin it enables runs.
	Config     *hostconfig.Config
	ConfigName string
	// Registry holds the plugins built in.
	Registry *plugins.Registry
	// RepoRoot is the source tree (for CRDs and the results folder).
	RepoRoot string
	// AssetsDir holds kube-apiserver and etcd.
	AssetsDir string
	// Profiles is how many Profiles to converge.
	Profiles int
	// QPS and Burst are the client rate limits of the host and of the
	// plain client that sets the floor.
	QPS   float32
	Burst int
	// Concurrency, when positive, overrides every plugin's concurrency
	// (reconciles at once) in the configuration.
	Concurrency int
	// Drift is how many owned objects to delete or edit by hand.
	Drift int
	// Unrelated is how many Secrets and ConfigMaps (half each) to add before
	// the second memory reading.
	Unrelated int
	// HostProcess also runs the host alone as `profilekit run` in a child
	// process for the memory readings.
	HostProcess bool
	// HostBinary is the profilekit binary the child process runs.
	HostBinary string
	// Seed picks the drifted objects.
	Seed uint64
	// Timeout bounds each wait (convergence, resync, repairs).
	Timeout time.Duration
	// ConvergeLimit, when positive, stops the convergence after this long
	// and saves how far it got, skipping the later phases.
	ConvergeLimit time.Duration
	// CPUProfile, when set, is where a CPU profile of this process (the
	// host and the benchmark's client) during convergence is written.
	CPUProfile string
	// RolloutCPUProfile, when set, is where a CPU profile of this process
	// from the restart of the host-wide change until its last ResourceQuota
	// changed is written (the first rollout, without the probe).
	RolloutCPUProfile string
	// HeapProfile, when set, is where a heap profile of this process is
	// written after the memory readings.
	HeapProfile string
	// APIServerProfile, when set, is where CPU profiles of kube-apiserver
	// over the first APIServerProfileSeconds of each floor and of the
	// convergence are written, with ".<regime>.<phase>" added to the name.
	APIServerProfile string
	// APIServerProfileSeconds is how long each kube-apiserver profile runs.
	APIServerProfileSeconds int
	// Regimes are the client rate regimes to measure, in order: "limited"
	// (QPS and Burst) and "unthrottled" (client rate 100000 for the host
	// and the floors). The first runs every phase on the run's control
	// plane; each other runs its floors, convergence and host-wide change
	// on a fresh one. Empty means both, limited first.
	Regimes []string
	// Rounds is how many times each regime's floors and convergence are
	// measured (1 when 0). The first round of the first regime runs every
	// phase; each further round runs the regime's floors, convergence and
	// host-wide change on fresh control planes, as a regime after the first
	// does. A regime's figures are its first round's; the medians of the
	// rounds' ratios are compared with the targets too (Regime.Median).
	Rounds int
	// Latency times new Profiles in the first regime: with the host idle,
	// during the host-wide change's rollout and during the bulk convergence.
	Latency bool
	// FreshPhases gives each timed phase of a regime (the POST floor, the
	// apply floor, the convergence) a control plane of its own, so that
	// each starts from an empty store; otherwise the apply floor runs beside
	// the POST floor's objects and the convergence beside both floors'.
	FreshPhases bool
	// WatchedFloor also times the POST floor's client while a cache of the
	// host's options watches every object it writes (watchedFloor): what
	// watching its own writes costs a controller before it decides
	// anything.
	WatchedFloor bool
	// ResultsDir receives the JSON result; empty writes none.
	ResultsDir string
	// Out receives progress and the result table.
	Out io.Writer
	// Logger receives the host's logs.
	Logger logr.Logger
}

// bench is one run's state.
type bench struct {
	Options
	cfg    *hostconfig.Config
	reg    *plugins.Registry
	defs   []plugins.Definition
	scheme *k8sruntime.Scheme
	admin  *rest.Config
	driver client.WithWatch
	drv    *counter
	cs     kubernetes.Interface
	res    *Result
	// regime names the client rate regime this run measures.
	regime string
	// extraProfiles are the Profiles beside the N that the host serves:
	// the warm-up's and the bulk latency probe's.
	extraProfiles int
	// kubeconfig reaches the control plane as an administrator.
	kubeconfig []byte
	// closeCP stops the control plane open now.
	closeCP func()
}

// driverQPS is the rate of the benchmark's own client, far above the host's
// so that setting up never holds the measurement back.
const (
	driverQPS     = 2000
	driverBurst   = 4000
	driverWorkers = 16
)

// Regimes of the client rate limits.
const (
	// RegimeLimited holds the host and the floors to Options.QPS and Burst.
	RegimeLimited = "limited"
	// RegimeUnthrottled sets their client rate so high that the limiter
	// never waits: what the machine can do.
	RegimeUnthrottled = "unthrottled"
	unthrottledRate   = 100000
)

// rateOf returns a regime's client QPS and burst.
func (o Options) rateOf(regime string) (float32, int) {
	if regime == RegimeUnthrottled {
		return unthrottledRate, unthrottledRate
	}
	return o.QPS, o.Burst
}

// Run runs the benchmark and prints its table. It returns an error when a
// step fails, and also, after printing and saving the result, when a resync
// with nothing changed sent a mutating request.
func Run(ctx context.Context, o Options) (err error) {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Minute
	}
	if o.Profiles <= 0 {
		return fmt.Errorf("--profiles must be positive, got %d", o.Profiles)
	}
	if o.APIServerProfile != "" && o.APIServerProfileSeconds <= 0 {
		return fmt.Errorf("--apiserver-profile-seconds must be positive, got %d", o.APIServerProfileSeconds)
	}
	if o.Rounds < 0 {
		return fmt.Errorf("--rounds must not be negative, got %d", o.Rounds)
	}
	o.Rounds = max(o.Rounds, 1)
	if len(o.Regimes) == 0 {
		o.Regimes = []string{RegimeLimited, RegimeUnthrottled}
	}
	for i, r := range o.Regimes {
		if r != RegimeLimited && r != RegimeUnthrottled {
			return fmt.Errorf("regime %q: want %s or %s", r, RegimeLimited, RegimeUnthrottled)
		}
		if slices.Contains(o.Regimes[:i], r) {
			return fmt.Errorf("regime %s named twice", r)
		}
	}
	qps, burst := o.rateOf(o.Regimes[0])
	res := &Result{
		Started: time.Now().UTC(), Profiles: o.Profiles, QPS: qps, Burst: burst, Regime: o.Regimes[0],
		Config: o.ConfigName, GoVersion: runtime.Version(), HostGOGC: hostGOGC(), CPUs: runtime.NumCPU(),
		FreshPhases: o.FreshPhases,
	}
	res.Revision = revision(ctx, o.RepoRoot)
	if o.HostProcess && o.HostBinary != "" {
		res.HostRevision = hostRevision(ctx, o.HostBinary)
	}
	fmt.Fprintf(o.Out, "profilekit bench: %d Profiles, regimes %s, config %s\n", o.Profiles, strings.Join(o.Regimes, ", "), o.ConfigName)
	b := newBench(o, res, o.Regimes[0])
	failed := b.runFirst(ctx)
	if failed != nil && !errors.Is(failed, errIncomplete) {
		return failed
	}
	first, err := o.moreRounds(ctx, regimeOf(o.Regimes[0], res, "first"))
	if err != nil {
		return err
	}
	res.Regimes = append(res.Regimes, first)
	for _, r := range o.Regimes[1:] {
		reg, err := newBench(o, &Result{Profiles: o.Profiles}, r).runOther(ctx)
		if err == nil {
			reg, err = o.moreRounds(ctx, reg)
		}
		if err != nil {
			return err
		}
		res.Regimes = append(res.Regimes, reg)
	}
	if failed == nil {
		if n := res.Steady.MutatingRequests; n != 0 {
			failed = fmt.Errorf("a resync with nothing changed sent %d mutating requests; want 0", n)
		}
	}
	return b.finish(failed)
}

// newBench returns a run of one regime that records into res.
func newBench(o Options, res *Result, regime string) *bench {
	o.QPS, o.Burst = o.rateOf(regime)
	res.QPS, res.Burst = o.QPS, o.Burst
	return &bench{Options: o, reg: o.Registry, res: res, regime: regime}
}

// open starts a fresh control plane for the regime and the benchmark's
// clients; close stops it.
func (b *bench) open(ctx context.Context) error {
	cfg := *b.Config
	cfg.Client.QPS = b.QPS
	cfg.Client.Burst = b.Burst
	if b.Concurrency > 0 {
		cfg.Plugins = maps.Clone(cfg.Plugins)
		for k, sec := range cfg.Plugins {
			sec.Concurrency = b.Concurrency
			cfg.Plugins[k] = sec
		}
	}
	cp, err := local.StartControlPlane(ctx, local.Options{
		Config: &cfg, Registry: b.Registry, RepoRoot: b.RepoRoot, AssetsDir: b.AssetsDir, Out: b.Out,
	})
	if err != nil {
		return err
	}
	stop := sync.OnceFunc(func() {
		if serr := cp.Env.Stop(); serr != nil {
			fmt.Fprintf(b.Out, "stop the control plane: %v\n", serr)
		}
	})
	b.closeCP = stop
	b.cfg, b.defs, b.scheme = cp.Config, cp.Definitions, cp.Scheme
	b.res.Plugins = b.cfg.Enabled()
	b.admin, b.kubeconfig = cp.Env.Config, cp.Env.KubeConfig
	b.drv = newCounter()
	dc := b.drv.wrap(b.admin)
	dc.QPS, dc.Burst = driverQPS, driverBurst
	if b.driver, err = client.NewWithWatch(dc, client.Options{Scheme: b.scheme}); err != nil {
		stop()
		return fmt.Errorf("benchmark client: %w", err)
	}
	if b.cs, err = kubernetes.NewForConfig(b.admin); err != nil {
		stop()
		return fmt.Errorf("benchmark clientset: %w", err)
	}
	b.res.Workers = 0
	for _, kind := range b.cfg.Enabled() {
		sec, _ := b.cfg.Section(kind)
		b.res.Workers += cmpOr(sec.Concurrency, hostconfig.DefaultConcurrency)
	}
	return nil
}

// close stops the control plane open now, if any.
func (b *bench) close() {
	if b.closeCP != nil {
		b.closeCP()
	}
}

// fresh replaces the control plane with an empty one before the next timed
// phase, when FreshPhases is set.
func (b *bench) fresh(ctx context.Context) error {
	if !b.FreshPhases {
		return nil
	}
	fmt.Fprintf(b.Out, "\n(a fresh control plane for the next phase)\n")
	b.close()
	return b.open(ctx)
}

// prepare renders the desired objects and times both floors.
func (b *bench) prepare(ctx context.Context) ([]*kubeflowv1.Profile, *desired, error) {
	profiles := make([]*kubeflowv1.Profile, b.Profiles)
	for i := range profiles {
		profiles[i] = Profile("bench", i+1)
	}
	t := time.Now()
	d, err := b.renderDesired(ctx, profiles)
	if err != nil {
		return nil, nil, err
	}
	b.res.Objects = len(d.objects)
	b.res.ObjectsByKind = d.byKind()
	fmt.Fprintf(b.Out, "rendered %d objects for %d Profiles offline in %s\n", len(d.objects), len(profiles), time.Since(t).Round(time.Millisecond))
	if err := b.floor(ctx, d); err != nil {
		return nil, nil, err
	}
	if b.WatchedFloor {
		if err := b.fresh(ctx); err != nil {
			return nil, nil, err
		}
		if err := b.watchedFloor(ctx, d); err != nil {
			return nil, nil, err
		}
	}
	if err := b.fresh(ctx); err != nil {
		return nil, nil, err
	}
	if err := b.applyFloor(ctx, d); err != nil {
		return nil, nil, err
	}
	if b.FreshPhases {
		if err := b.profilesAlone(ctx, profiles); err != nil {
			return nil, nil, err
		}
	}
	if err := b.fresh(ctx); err != nil {
		return nil, nil, err
	}
	return profiles, d, nil
}

// finish prints and saves the result, and returns failed, the run's
// verdict.
func (b *bench) finish(failed error) error {
	b.res.Finished = time.Now().UTC()
	b.res.anchors()
	b.res.WriteTable(b.Out)
	if b.ResultsDir != "" {
		path, err := b.res.Save(b.ResultsDir)
		if err != nil {
			return errors.Join(failed, err)
		}
		fmt.Fprintf(b.Out, "\nresult saved to %s\n", path)
	}
	return failed
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
