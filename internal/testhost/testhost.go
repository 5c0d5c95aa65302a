// Package testhost runs plugins under the standalone reconciler against a
// testenv control plane, for tests: one manager per test, with a request
// counter on its client and helpers to create Profiles and wait for conditions.
package testhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// Plugin is a plugin definition and the options its reconciler runs with.
type Plugin struct {
	Def     plugins.Definition
	Options []reconcilers.Option
}

// Host is a running manager with one controller per plugin.
type Host struct {
	// Counter counts every request the manager's clients send.
	Counter *testenv.Counter
	// Manager is the running manager.
	Manager manager.Manager
	// statusDelay is the StatusWriter's gathering delay.
	statusDelay time.Duration
}

// Start runs a manager with a controller per plugin until the test ends.
func Start(t *testing.T, env *testenv.Env, ps ...Plugin) *Host {
	t.Helper()
	return StartWithStatusWriter(t, env, 0, nil, ps...)
}

// StartWithStatusWriter is Start with the StatusWriter's delay (0: the
// default) and options given.
func StartWithStatusWriter(t *testing.T, env *testenv.Env, delay time.Duration, opts []reconcilers.StatusWriterOption, ps ...Plugin) *Host {
	t.Helper()
	counter := &testenv.Counter{}
	mgr, err := ctrl.NewManager(counter.Counting(env.Config), manager.Options{
		Scheme:         env.Scheme,
		Cache:          reconcilers.CacheOptions(nil),
		Client:         reconcilers.ClientOptions(),
		MapperProvider: reconcilers.NewRESTMapper,
		Metrics:        metricsserver.Options{BindAddress: "0"},
		Controller:     config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	status, err := reconcilers.NewStatusWriter(mgr, delay, opts...)
	if err != nil {
		t.Fatalf("status writer: %v", err)
	}
	for _, p := range ps {
		r, err := reconcilers.New(mgr, p.Def, append([]reconcilers.Option{reconcilers.WithStatusWriter(status)}, p.Options...)...)
		if err != nil {
			t.Fatalf("reconciler %s: %v", p.Def.Kind(), err)
		}
		if err := r.SetupWithManager(mgr); err != nil {
			t.Fatalf("set up %s: %v", p.Def.Kind(), err)
		}
	}
	Run(t, mgr)
	if delay <= 0 {
		delay = reconcilers.DefaultStatusDelay
	}
	return &Host{Counter: counter, Manager: mgr, statusDelay: delay}
}

// Run starts mgr until the test ends, when it stops it and fails the test
// if it stopped with an error, and waits for its cache to sync.
func Run(t *testing.T, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Logf("goroutines in profilekit's code after the grace period:\n%s", stuckGoroutines(20))
			}
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
}

// DefaultOwner owns the Profiles NewProfile makes.
const DefaultOwner = "owner@example.org"

// NewProfile creates a namespace and a Profile named name (made unique per
// test by the caller), with the given plugins and labels. Both are deleted
// when the test ends.
func NewProfile(t *testing.T, c client.Client, name string, labels map[string]string, ps ...kubeflowv1.Plugin) *kubeflowv1.Profile {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: kubeflowv1.ProfileSpec{
			Owner:   rbacUser(DefaultOwner),
			Plugins: ps,
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatalf("create profile: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), p)
		_ = c.Delete(context.Background(), ns)
	})
	return p
}

// Eventually polls cond every 50ms until it returns true or timeout passes,
// then fails the test with the last message cond gave.
func Eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %s: %s", timeout, last)
	}
}

// WaitCondition waits until the Profile's condition of type ct has status
// (and, when not empty, a message containing msg), and returns it.
//
// The bound is a liveness bound, not a measure of speed: under make test,
// beside another package, one pass of a plugin with outside state took 6 s
// and its condition 9 s, against under 1 s alone.
func WaitCondition(t *testing.T, c client.Client, name, ct, status, msg string) kubeflowv1.ProfileCondition {
	t.Helper()
	var got kubeflowv1.ProfileCondition
	Eventually(t, time.Minute, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		cond := plugins.FindCondition(p.Status.Conditions, ct)
		if cond == nil {
			return false, fmt.Sprintf("no %s condition in %v", ct, p.Status.Conditions)
		}
		got = *cond
		return cond.Status == status && strings.Contains(cond.Message, msg), fmt.Sprintf("%s=%s %q", ct, cond.Status, cond.Message)
	})
	return got
}

// Reconciles returns how many times the plugin's controller has reconciled in
// this process, from controller-runtime's metrics.
func Reconciles(t *testing.T, kind string) float64 {
	t.Helper()
	return controllerCounter(t, "controller_runtime_reconcile_total", kind)
}

// Wakes returns how many events of trigger (see the metric
// profilekit_plugin_wakes_total: "profile", "owned/<Kind>",
// "watched/<Kind>", "namespace", ...) have asked for a pass of the plugin
// in this process. Events of one informer are handled in order: once a
// later event's wake is counted, an earlier one's would have been too.
func Wakes(t *testing.T, kind, trigger string) float64 {
	t.Helper()
	return triggerCounter(t, "profilekit_plugin_wakes_total", kind, trigger)
}

// ReconcilesBy returns how many passes of the plugin in this process the
// first event that asked for them was of trigger ("requeue": none was).
func ReconcilesBy(t *testing.T, kind, trigger string) float64 {
	t.Helper()
	return triggerCounter(t, "profilekit_plugin_reconciles_total", kind, trigger)
}

// triggerCounter reads the series of counter name of the plugin and trigger.
func triggerCounter(t *testing.T, name, kind, trigger string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "plugin") == kind && label(m, "trigger") == trigger {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TerminalErrors returns how many terminal errors the plugin's controller
// has counted in this process, from controller-runtime's metrics.
func TerminalErrors(t *testing.T, kind string) float64 {
	t.Helper()
	return controllerCounter(t, "controller_runtime_terminal_reconcile_errors_total", kind)
}

// controllerCounter sums controller-runtime's counter name over the series
// of the plugin's controller.
func controllerCounter(t *testing.T, name, kind string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == plugins.FieldManagerFor(kind) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func rbacUser(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// ResyncWrites lets the passes that earlier changes started finish (they may
// run on a cache that has not yet seen their own writes) and the conditions
// they handed the StatusWriter be written: it waits, for up to 20 seconds,
// for a window as long as the counted one (n passes of each kind, then the
// writer's delay twice) with no mutating request. Then it waits for at least
// n more passes of each plugin kind and returns the mutating requests sent
// meanwhile. A host that writes on every pass
// never goes quiet, and its writes show in what is returned. The plugins
// must run with a short resync period.
func (h *Host) ResyncWrites(t *testing.T, n int, kinds ...string) []string {
	t.Helper()
	waitPasses := func(count int) {
		start := make(map[string]float64, len(kinds))
		for _, k := range kinds {
			start[k] = Reconciles(t, k)
		}
		Eventually(t, 20*time.Second, func() (bool, string) {
			for _, k := range kinds {
				if got := Reconciles(t, k) - start[k]; got < float64(count) {
					return false, fmt.Sprintf("%v of %d %s reconciles", got, count, k)
				}
			}
			return true, ""
		})
	}
	for quiet := time.Now().Add(20 * time.Second); time.Now().Before(quiet); {
		h.Counter.Reset()
		waitPasses(n)
		time.Sleep(2 * h.statusDelay)
		if len(h.Counter.Mutating()) == 0 {
			break
		}
	}
	h.Counter.Reset()
	waitPasses(n)
	return h.Counter.Mutating()
}

// UpdateProfile changes the named Profile with mutate, reading it afresh and
// trying again when a controller's status write got there first.
func UpdateProfile(t *testing.T, c client.Client, name string, mutate func(*kubeflowv1.Profile)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p kubeflowv1.Profile
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		mutate(&p)
		return c.Update(context.Background(), &p)
	})
	if err != nil {
		t.Fatalf("update profile %s: %v", name, err)
	}
}

// Events returns the Events about the named Profiles, a line each (Profile,
// type, reason, how many times, first and last seen, note), for a test to
// print when it sees a write it did not expect.
func Events(t *testing.T, c client.Reader, names ...string) []string {
	t.Helper()
	var l eventsv1.EventList
	if err := c.List(context.Background(), &l, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind != "Profile" || !slices.Contains(names, e.Regarding.Name) {
			continue
		}
		count, last := 1, e.EventTime.Time
		if e.Series != nil {
			count, last = int(e.Series.Count), e.Series.LastObservedTime.Time
		}
		out = append(out, fmt.Sprintf("%s %s %s x%d %s..%s %s", e.Regarding.Name, e.Type, e.Reason, count,
			e.EventTime.Format("15:04:05.000"), last.Format("15:04:05.000"), e.Note))
	}
	slices.Sort(out)
	return out
}

// WaitRevoked waits for the Revoked Event of plugin kind on the Profile
// named name whose note counts exactly summary (plugins.Result's Summary,
// such as "1 configured, 1 deleted"): what a revoke says it did.
func WaitRevoked(t *testing.T, c client.Reader, name, kind, summary string) {
	t.Helper()
	Eventually(t, 10*time.Second, func() (bool, string) {
		events := Events(t, c, name)
		return slices.ContainsFunc(events, func(e string) bool {
			return strings.Contains(e, " "+plugins.ReasonRevoked+" ") && strings.HasSuffix(e, " "+kind+": "+summary)
		}), fmt.Sprintf("Events %v, want %s's %s counting %s", events, kind, plugins.ReasonRevoked, summary)
	})
}
