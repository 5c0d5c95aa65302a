package reconcilers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/rbac"
	"github.com/profilekit/profilekit/reconcilers"
)

// queued is a plugin that serves one Profile at a time and takes pass for
// its first pass over each, so that it reports the last of a batch of new
// Profiles long after the host's other plugins have: a queue that drains
// slower than the others', as the network plugin's (six policies a
// Profile) does behind quotas' (one object) at thousands of Profiles.
func queued(pass time.Duration) plugins.Definition {
	return plugins.Definition{Plugin: plugins.Funcs{
		KindName: "queued",
		ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
			if plugins.FindCondition(req.Profile.Status.Conditions, "QueuedReady") == nil {
				select {
				case <-time.After(pass):
				case <-ctx.Done():
				}
			}
			return plugins.Result{}, nil
		},
		RevokeFunc: func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, nil },
	}}
}

// startWithStatusWriter runs the plugins like testhost.Start, with a
// StatusWriter whose delay (0: the default) and wait are given.
func startWithStatusWriter(t *testing.T, delay, wait time.Duration, ps ...testhost.Plugin) *testenv.Counter {
	t.Helper()
	return testhost.StartWithStatusWriter(t, env, delay, []reconcilers.StatusWriterOption{reconcilers.WithStatusWait(wait)}, ps...).Counter
}

// Fifty new Profiles at once, each also listing kinds this host does not
// run (expose, egress), served by plugins whose queues drain at different
// speeds: the last plugin reports the last Profile seconds after the
// others, longer than the StatusWriter's wait (2 s here, as the 30 s
// default is against the lag of thousands of Profiles). Every Profile gets
// exactly one status write, carrying the condition of every plugin the host
// runs for it and Ready True, written soon after its last plugin reported.
func TestOneStatusWritePerProfileWithDeepQueues(t *testing.T) {
	const n = 50
	const pass = 100 * time.Millisecond // the queued plugin's last report comes n*pass after the first
	counter := startWithStatusWriter(t, 0, 2*time.Second,
		testhost.Plugin{Def: quotas.Definition()},
		testhost.Plugin{Def: limitrange.Definition()},
		testhost.Plugin{Def: rbac.Definition(), Options: []reconcilers.Option{
			reconcilers.WithEnabledForAll(nil),
			reconcilers.WithDefaults([]byte(`{"bindings":[
				{"name":"support-view","roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"Group","name":"support@example.org"}]},
				{"name":"auditors-view","roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"Group","name":"auditors@example.org"}]}]}`)),
		}},
		testhost.Plugin{Def: network.Definition(), Options: []reconcilers.Option{
			reconcilers.WithEnabledForAll(nil),
			reconcilers.WithDefaults([]byte(`{"policies":[
				{"name":"default-deny","podSelector":{},"policyTypes":["Ingress","Egress"]},
				{"name":"allow-same-namespace","podSelector":{},"policyTypes":["Ingress","Egress"],"ingress":[{"from":[{"podSelector":{}}]}],"egress":[{"to":[{"podSelector":{}}]}]}]}`)),
		}},
		testhost.Plugin{Def: queued(pass), Options: []reconcilers.Option{reconcilers.WithEnabledForAll(nil), reconcilers.WithConcurrency(1)}},
	)
	prefix := "deep-" + rand.String(4)
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%s-%02d", prefix, i))
	}
	counter.Reset()
	start := time.Now()
	for _, name := range names {
		testhost.NewProfile(t, env.Client, name, nil,
			entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`),
			entry(limitrange.Kind, `{"container":{"default":{"cpu":"500m"}}}`),
			entry("expose", `{"apps":[{"name":"rstudio","service":"rstudio","port":8787}]}`),
			entry("egress", `{"hosts":[{"host":"data.blob.core.windows.net"}]}`))
	}

	// Ready on every Profile well within the default wait: the writer
	// waits for the plugins, not for a clock.
	testhost.Eventually(t, reconcilers.DefaultStatusWait/2, func() (bool, string) {
		for _, name := range names {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			if c := plugins.FindCondition(p.Status.Conditions, plugins.ConditionReady); c == nil || c.Status != plugins.ConditionTrue {
				return false, fmt.Sprintf("profile %s after %s: conditions %v", name, time.Since(start).Round(time.Millisecond), p.Status.Conditions)
			}
		}
		return true, ""
	})
	ready := time.Since(start)
	// A write caused by our own write, or by a plugin's next pass, would
	// come within a few delays.
	time.Sleep(4 * reconcilers.DefaultStatusDelay)

	want := []string{"LimitRangeReady", "NetworkReady", "QueuedReady", "QuotasReady", "RbacReady", plugins.ConditionReady}
	total := 0
	for _, name := range names {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range p.Status.Conditions {
			got = append(got, c.Type)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("profile %s conditions = %v, want %v", name, got, want)
		}
		if c := plugins.FindCondition(p.Status.Conditions, plugins.ConditionReady); c == nil || c.Message != "PluginsReady: 5 plugins ready" {
			t.Errorf("profile %s Ready = %v, want True for the 5 plugins this host runs", name, c)
		}
		writes := counter.Mutating("/profiles/" + name + "/status")
		total += len(writes)
		if len(writes) != 1 {
			t.Errorf("profile %s: %d status writes, want exactly one", name, len(writes))
		}
	}
	t.Logf("%d Profiles ready in %s with %d status writes (%.2f per Profile)", n, ready.Round(time.Millisecond), total, float64(total)/n)
}

// A failure is not held back for a plugin that has not reported yet: a bad
// spec shows on the Profile, with Ready False, while another plugin's first
// pass is still under way.
func TestStatusWriterShowsAFailureAtOnce(t *testing.T) {
	const latePass = 8 * time.Second
	late := plugins.Definition{Plugin: plugins.Funcs{
		KindName: "late",
		ApplyFunc: func(ctx context.Context, _ plugins.Request) (plugins.Result, error) {
			select {
			case <-time.After(latePass):
			case <-ctx.Done():
			}
			return plugins.Result{}, nil
		},
		RevokeFunc: func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, nil },
	}}
	testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition()}, testhost.Plugin{Def: late})
	name := "fails-" + rand.String(5)
	start := time.Now()
	testhost.NewProfile(t, env.Client, name, nil, entry(quotas.Kind, `{"hrad":{"limits.cpu":"4"}}`), entry("late", ""))
	u := waitFor(t, name, "QuotasReady", plugins.ConditionFalse, latePass/2)
	if c := condition(t, u, "QuotasReady"); !strings.HasPrefix(c.Message, plugins.ReasonInvalidSpec+": ") {
		t.Errorf("QuotasReady message = %q, want the InvalidSpec", c.Message)
	}
	if c := condition(t, u, plugins.ConditionReady); c.Status != plugins.ConditionFalse {
		t.Errorf("Ready = %s %q, want False in the same write", c.Status, c.Message)
	}
	t.Logf("QuotasReady False written %s after the Profile's creation, the late plugin still in its pass", time.Since(start).Round(time.Millisecond))
}

// TestCompleteConditionsAreWrittenAtOnce gives the StatusWriter a delay far
// longer than the test waits: a new Profile's conditions must still be
// written, in one write, as soon as every plugin that applies to it has
// reported True, for a user who has just signed up waits on Ready.
func TestCompleteConditionsAreWrittenAtOnce(t *testing.T) {
	const delay = time.Minute
	counter := startWithStatusWriter(t, delay, reconcilers.DefaultStatusWait,
		testhost.Plugin{Def: quotas.Definition()},
		testhost.Plugin{Def: limitrange.Definition()},
		testhost.Plugin{Def: rbac.Definition(), Options: []reconcilers.Option{reconcilers.WithEnabledForAll(nil)}},
	)
	name := "at-once-" + rand.String(4)
	counter.Reset()
	start := time.Now()
	testhost.NewProfile(t, env.Client, name, nil,
		entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`),
		entry(limitrange.Kind, `{"container":{"default":{"cpu":"500m"}}}`))
	testhost.WaitCondition(t, env.Client, name, plugins.ConditionReady, plugins.ConditionTrue, "3 plugins ready")
	t.Logf("Ready after %s with the writer's delay at %s", time.Since(start).Round(time.Millisecond), delay)
	if n := counter.Count("PUT", "/apis/kubeflow.org/v1/profiles/"+name+"/status"); n != 1 {
		t.Errorf("%d status writes, want exactly one", n)
	}
}
