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
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
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
	// HeapProfile, when set, is where a heap profile of this process is
	// written after the memory readings.
	HeapProfile string
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
	// kubeconfig reaches the control plane as an administrator.
	kubeconfig []byte
}

// driverQPS is the rate of the benchmark's own client, far above the host's
// so that setting up never holds the measurement back.
const (
	driverQPS     = 2000
	driverBurst   = 4000
	driverWorkers = 16
)

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
	cfg := *o.Config
	cfg.Client.QPS = o.QPS
	cfg.Client.Burst = o.Burst
	if o.Concurrency > 0 {
		cfg.Plugins = maps.Clone(cfg.Plugins)
		for k, sec := range cfg.Plugins {
			sec.Concurrency = o.Concurrency
			cfg.Plugins[k] = sec
		}
	}
	b := &bench{Options: o, reg: o.Registry}
	b.res = &Result{
		Started: time.Now().UTC(), Profiles: o.Profiles, QPS: o.QPS, Burst: o.Burst,
		Config: o.ConfigName, GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
	}
	b.res.Revision = revision(ctx, o.RepoRoot)
	fmt.Fprintf(o.Out, "profilekit bench: %d Profiles, client %g QPS / %d burst, config %s\n", o.Profiles, o.QPS, o.Burst, o.ConfigName)

	cp, err := local.StartControlPlane(ctx, local.Options{
		Config: &cfg, Registry: o.Registry, RepoRoot: o.RepoRoot, AssetsDir: o.AssetsDir, Out: o.Out,
	})
	if err != nil {
		return err
	}
	defer func() {
		if serr := cp.Env.Stop(); serr != nil {
			fmt.Fprintf(o.Out, "stop the control plane: %v\n", serr)
		}
	}()
	b.cfg, b.defs, b.scheme = cp.Config, cp.Definitions, cp.Scheme
	b.res.Plugins = b.cfg.Enabled()
	b.admin, b.kubeconfig = cp.Env.Config, cp.Env.KubeConfig
	b.drv = newCounter()
	dc := b.drv.wrap(b.admin)
	dc.QPS, dc.Burst = driverQPS, driverBurst
	if b.driver, err = client.NewWithWatch(dc, client.Options{Scheme: b.scheme}); err != nil {
		return fmt.Errorf("benchmark client: %w", err)
	}
	if b.cs, err = kubernetes.NewForConfig(b.admin); err != nil {
		return fmt.Errorf("benchmark clientset: %w", err)
	}
	for _, kind := range b.cfg.Enabled() {
		sec, _ := b.cfg.Section(kind)
		b.res.Workers += cmpOr(sec.Concurrency, hostconfig.DefaultConcurrency)
	}

	profiles := make([]*kubeflowv1.Profile, o.Profiles)
	for i := range profiles {
		profiles[i] = Profile("bench", i+1)
	}
	t := time.Now()
	d, err := b.renderDesired(ctx, profiles)
	if err != nil {
		return err
	}
	b.res.Objects = len(d.objects)
	b.res.ObjectsByKind = d.byKind()
	fmt.Fprintf(o.Out, "rendered %d objects for %d Profiles offline in %s\n", len(d.objects), len(profiles), time.Since(t).Round(time.Millisecond))

	if err := b.floor(ctx, d); err != nil {
		return err
	}
	h, err := b.startHost(ctx)
	if err != nil {
		return err
	}
	defer func() { b.stop(h) }()
	if err := b.converge(ctx, h, profiles, d); errors.Is(err, errIncomplete) {
		b.stop(h)
		return b.finish(err)
	} else if err != nil {
		return err
	}
	b.stop(h)
	if h, err = b.steadyState(ctx); err != nil {
		return err
	}
	if err := b.drift(ctx, d); err != nil {
		return err
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	var c *child
	if o.HostProcess {
		dir, err := os.MkdirTemp("", "profilekit-bench-")
		if err != nil {
			return fmt.Errorf("temporary folder: %w", err)
		}
		defer os.RemoveAll(dir)
		fmt.Fprintf(b.Out, "\n== host process: profilekit run, alone, against the same control plane\n")
		start := time.Now()
		if c, err = b.startChild(ctx, dir); err != nil {
			return err
		}
		defer c.stop()
		if err := b.waitPass(ctx, c); err != nil {
			return fmt.Errorf("%w\n%s", err, c.tail())
		}
		fmt.Fprintf(b.Out, "started and reconciled every Profile in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if err := b.memory(ctx, h, c, names); err != nil {
		return err
	}
	// The host-wide change runs one host, with the new configuration.
	b.stop(h)
	if c != nil {
		c.stop()
	}
	if err := b.hostWideChange(ctx); err != nil {
		return err
	}
	if n := b.res.Steady.MutatingRequests; n != 0 {
		return b.finish(fmt.Errorf("a resync with nothing changed sent %d mutating requests; want 0", n))
	}
	return b.finish(nil)
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

// host is the host running in-process, with the counter of its requests.
type host struct {
	*local.Host
	counter *counter
}

// stop stops the host and notes an error it ended with.
func (b *bench) stop(h *host) {
	if err := h.Stop(); err != nil {
		fmt.Fprintf(b.Out, "host: %v\n", err)
	}
}

// startHost starts the host with the run's configuration.
func (b *bench) startHost(ctx context.Context) (*host, error) {
	return b.startHostWith(ctx, b.cfg)
}

// startHostWith starts a host with cfg in place of the run's configuration,
// counting its requests.
func (b *bench) startHostWith(ctx context.Context, cfg *hostconfig.Config) (*host, error) {
	cnt := newCounter()
	h, err := local.StartHost(ctx, cnt.wrap(b.admin), cfg, b.reg, b.Logger)
	if err != nil {
		return nil, err
	}
	return &host{Host: h, counter: cnt}, nil
}

// parallel runs fn for every index below n on workers goroutines, and
// returns the errors joined.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	idx := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if len(errs) < 10 {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		select {
		case idx <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(idx)
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// createNamespaces creates the namespaces that the upstream controller
// would create, before any clock starts.
func (b *bench) createNamespaces(ctx context.Context, names []string) error {
	return parallel(ctx, len(names), driverWorkers, func(ctx context.Context, i int) error {
		err := b.driver.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", names[i], err)
		}
		return nil
	})
}

// resourceOf returns the resource name (plural) of a kind.
func (b *bench) resourceOf(gvk schema.GroupVersionKind) (string, error) {
	m, err := b.driver.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", fmt.Errorf("resource of %s: %w", gvk, err)
	}
	return m.Resource.Resource, nil
}

// hostResources are the resources the host reads or writes: Profiles, the
// owned kinds, Events, and the kinds plugins watch.
func (b *bench) hostResources(d []schema.GroupVersionKind) map[string]bool {
	out := map[string]bool{"profiles": true, "events": true, "rolebindings": true}
	for _, gvk := range d {
		if r, err := b.resourceOf(gvk); err == nil {
			out[r] = true
		}
	}
	return out
}

// waitIdle waits until no controller has queued or in-flight work for a
// whole second.
func waitIdle(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	quiet := 0
	for quiet < 5 {
		if time.Now().After(deadline) {
			return fmt.Errorf("controllers still busy after %s", timeout)
		}
		n, err := busyControllers()
		if err != nil {
			return err
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// managedSelector selects every object profilekit manages.
func managedSelector() client.ListOption {
	return client.MatchingLabelsSelector{Selector: plugins.ManagedSelector()}
}

// revision returns the source tree's commit, or "" outside a git checkout.
func revision(ctx context.Context, root string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
