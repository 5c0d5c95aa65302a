package reconcilers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

func entry(kind, spec string) kubeflowv1.Plugin {
	p := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: kind}}
	if spec != "" {
		p.Spec = &runtime.RawExtension{Raw: []byte(spec)}
	}
	return p
}

func getProfile(t *testing.T, name string) *kubeflowv1.Profile {
	t.Helper()
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// pluginConditions returns p's conditions but the Profile-level Ready.
func pluginConditions(p *kubeflowv1.Profile) []kubeflowv1.ProfileCondition {
	var out []kubeflowv1.ProfileCondition
	for _, c := range p.Status.Conditions {
		if c.Type != plugins.ConditionReady {
			out = append(out, c)
		}
	}
	return out
}

func exists(t *testing.T, obj client.Object) (bool, string) {
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("%s not found", obj.GetName())
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, ""
}

func TestBothPluginsOwnershipAndQuietResync(t *testing.T) {
	h := testhost.Start(t, env,
		testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{reconcilers.WithResync(200 * time.Millisecond)}},
		testhost.Plugin{Def: limitrange.Definition(), Options: []reconcilers.Option{reconcilers.WithResync(200 * time.Millisecond)}},
	)
	name := "both-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil,
		entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`),
		entry(limitrange.Kind, `{"container":{"default":{"cpu":"500m"},"max":{"cpu":"2"}}}`))

	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, name, "LimitRangeReady", plugins.ConditionTrue, "")
	objs := []client.Object{
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: quotas.DefaultName}},
		&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: limitrange.DefaultName}},
	}
	for i, obj := range objs {
		kind := []string{quotas.Kind, limitrange.Kind}[i]
		if ok, msg := exists(t, obj); !ok {
			t.Fatal(msg)
		}
		if !plugins.IsOwnedBy(obj.GetLabels(), kind, name) {
			t.Errorf("%s labels = %v, want ownership by %s", obj.GetName(), obj.GetLabels(), kind)
		}
		refs := obj.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != p.UID || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s owner references = %+v, want the Profile as controller", obj.GetName(), refs)
		}
		if !slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == plugins.FieldManagerFor(kind) && m.Operation == metav1.ManagedFieldsOperationApply
		}) {
			t.Errorf("%s has no server-side apply entry of %s", obj.GetName(), plugins.FieldManagerFor(kind))
		}
	}

	// Let both controllers resync several times with nothing changed.
	if got := h.ResyncWrites(t, 3, quotas.Kind, limitrange.Kind); len(got) != 0 {
		t.Errorf("mutating requests during resync = %v, want none", got)
	}
}

func TestHostEnablementAndRevoke(t *testing.T) {
	h := testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"hard":{"pods":"10"}}`)),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{"tier": "gold"})),
	}})
	name := "host-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, map[string]string{"tier": "gold"})
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: quotas.DefaultName}}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) { return exists(t, rq) })
	if got := rq.Spec.Hard["pods"]; got.String() != "10" {
		t.Errorf("pods = %s, want the host default 10", got.String())
	}
	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionTrue, "")
	if got := getProfile(t, name); len(got.Spec.Plugins) != 0 || got.Generation != p.Generation {
		t.Errorf("the Profile's spec was written: plugins %v, generation %d -> %d", got.Spec.Plugins, p.Generation, got.Generation)
	}
	if writes := h.Counter.Mutating("/profiles/" + name); slices.ContainsFunc(writes, func(w string) bool { return !strings.HasSuffix(w, "/status") }) {
		t.Errorf("requests wrote the Profile itself, not only its status: %v", writes)
	}

	// The Profile leaves the selector: the plugin no longer applies.
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Labels["tier"] = "silver" })
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		ok, _ := exists(t, rq)
		cond := plugins.FindCondition(getProfile(t, name).Status.Conditions, "QuotasReady")
		return !ok && cond == nil, fmt.Sprintf("quota exists=%v, condition %+v", ok, cond)
	})
}

func TestShardLeavesOtherProfilesAlone(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"shard": "a"})),
	}})
	in := "shard-in-" + rand.String(5)
	out := "shard-out-" + rand.String(5)
	testhost.NewProfile(t, env.Client, out, map[string]string{"shard": "b"}, entry(quotas.Kind, `{"hard":{"pods":"1"}}`))
	testhost.NewProfile(t, env.Client, in, map[string]string{"shard": "a"}, entry(quotas.Kind, `{"hard":{"pods":"1"}}`))
	testhost.WaitCondition(t, env.Client, in, "QuotasReady", plugins.ConditionTrue, "")
	time.Sleep(time.Second)
	if c := getProfile(t, out).Status.Conditions; len(c) != 0 {
		t.Errorf("a Profile outside the shard got conditions %v", c)
	}
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: out, Name: quotas.DefaultName}}
	if ok, _ := exists(t, rq); ok {
		t.Errorf("a Profile outside the shard got a quota")
	}
}

func TestInvalidSpecIsReportedAndNothingIsDeleted(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition()})
	name := "spec-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(quotas.Kind, `{"hard":{"pods":"3"}}`))
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: quotas.DefaultName}}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) { return exists(t, rq) })

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = []kubeflowv1.Plugin{entry(quotas.Kind, `{"hard":{"pods":"3"},"caps":{"pods":"100"}}`)}
	})
	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionFalse, `InvalidSpec: spec.plugins[0] (quotas).spec: field "caps" is set by the host only`)
	if ok, msg := exists(t, rq); !ok {
		t.Errorf("the quota was deleted because of a bad spec: %s", msg)
	}
}

// outsidePlugin is a plugin with state outside the namespace: it counts revokes.
func outsidePlugin(kind string, revokes *atomic.Int32, applyErr error) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{
			KindName:  kind,
			ApplyFunc: func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, applyErr },
			RevokeFunc: func(context.Context, plugins.Request) (plugins.Result, error) {
				revokes.Add(1)
				return plugins.Result{}, nil
			},
		},
		OutsideState: true,
	}
}

func TestFinalizerGuardsOutsideState(t *testing.T) {
	var revokes, brokenApplies atomic.Int32
	testhost.Start(t, env,
		testhost.Plugin{Def: outsidePlugin("vault", &revokes, nil)},
		// A plugin without outside state whose Apply always fails must not
		// hold the Profile back.
		testhost.Plugin{Def: plugins.Definition{Plugin: plugins.Funcs{KindName: "broken", ApplyFunc: func(context.Context, plugins.Request) (plugins.Result, error) {
			brokenApplies.Add(1)
			return plugins.Result{}, errors.New("backend down")
		}}}},
	)
	name := "fin-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry("vault", ""), entry("broken", ""))
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, name, "BrokenReady", plugins.ConditionFalse, "ApplyFailed: backend down")
	if fins := getProfile(t, name).Finalizers; !slices.Equal(fins, []string{"profilekit.dev/vault"}) {
		t.Fatalf("finalizers = %v, want only profilekit.dev/vault", fins)
	}

	if err := env.Client.Delete(t.Context(), getProfile(t, name)); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), fmt.Sprintf("profile still there: %v", err)
	})
	if n := revokes.Load(); n != 1 {
		t.Errorf("outside-state plugin revoked %d times, want 1", n)
	}
	if brokenApplies.Load() == 0 {
		t.Error("the failing plugin never ran")
	}
}

func TestRemovingAnOutsideStatePluginRevokesAndDropsTheFinalizer(t *testing.T) {
	var revokes atomic.Int32
	testhost.Start(t, env, testhost.Plugin{Def: outsidePlugin("bucket", &revokes, nil)})
	name := "drop-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry("bucket", ""))
	testhost.WaitCondition(t, env.Client, name, "BucketReady", plugins.ConditionTrue, "")
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		p := getProfile(t, name)
		// No condition is left, not even the Profile-level Ready: no
		// plugin of this host serves the Profile now.
		return len(p.Finalizers) == 0 && len(p.Status.Conditions) == 0, fmt.Sprintf("finalizers %v, conditions %v", p.Finalizers, p.Status.Conditions)
	})
	if n := revokes.Load(); n != 1 {
		t.Errorf("revoked %d times, want 1", n)
	}
}

// Conditions set for one Profile within the delay reach the API server in one
// status update.
func TestStatusWriterGathersConditions(t *testing.T) {
	h := testhost.Start(t, env)
	name := "status-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)
	w, err := reconcilers.NewStatusWriter(h.Manager, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The manager is running: start the writer by hand.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = w.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	h.Counter.Reset()
	for _, kind := range []string{"AlphaReady", "BetaReady", "GammaReady"} {
		w.Set(name, kind, &kubeflowv1.ProfileCondition{Type: kind, Status: plugins.ConditionTrue, Message: "ok"})
	}
	w.Set(name, "BetaReady", nil)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		got := pluginConditions(getProfile(t, name))
		return len(got) == 2, fmt.Sprintf("conditions %v", got)
	})
	got := pluginConditions(getProfile(t, name))
	if got[0].Type != "AlphaReady" || got[1].Type != "GammaReady" {
		t.Errorf("conditions = %v, want AlphaReady and GammaReady", got)
	}
	// No plugin of this host is expected for this Profile: it gets no
	// Ready.
	if c := plugins.FindCondition(getProfile(t, name).Status.Conditions, plugins.ConditionReady); c != nil {
		t.Errorf("Ready = %v, want none", c)
	}
	if writes := h.Counter.Mutating("/profiles/" + name + "/status"); len(writes) != 1 {
		t.Errorf("status writes = %v, want exactly one", writes)
	}
}

// startStatusWriter starts a StatusWriter on the running manager of h.
func startStatusWriter(t *testing.T, h *testhost.Host, delay time.Duration, opts ...reconcilers.StatusWriterOption) *reconcilers.StatusWriter {
	t.Helper()
	w, err := reconcilers.NewStatusWriter(h.Manager, delay, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = w.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// A new Profile's conditions wait for every plugin that applies to it, so that
// they reach the API server in one write however far apart the plugins
// report; once the Profile carries them all, a change is written after the
// delay alone.
func TestStatusWriterWaitsForEveryExpectedPlugin(t *testing.T) {
	h := testhost.Start(t, env)
	name := "expect-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)
	w := startStatusWriter(t, h, 50*time.Millisecond, reconcilers.WithStatusWait(time.Minute))
	this := func(p *kubeflowv1.Profile) bool { return p.Name == name }
	w.Expect("AlphaReady", this)
	w.Expect("BetaReady", this)
	w.Expect("ElsewhereReady", func(*kubeflowv1.Profile) bool { return false })
	ready := func(t, status string) *kubeflowv1.ProfileCondition {
		return &kubeflowv1.ProfileCondition{Type: t, Status: status, Message: "m"}
	}

	h.Counter.Reset()
	w.Set(name, "AlphaReady", ready("AlphaReady", plugins.ConditionTrue))
	time.Sleep(time.Second) // twenty delays: the writer would have written by now
	if writes := h.Counter.Mutating("/profiles/" + name + "/status"); len(writes) != 0 {
		t.Fatalf("wrote %v while BetaReady was expected and missing", writes)
	}
	w.Set(name, "BetaReady", ready("BetaReady", plugins.ConditionTrue))
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		got := pluginConditions(getProfile(t, name))
		return len(got) == 2, fmt.Sprintf("conditions %v", got)
	})
	if writes := h.Counter.Mutating("/profiles/" + name + "/status"); len(writes) != 1 {
		t.Errorf("status writes = %v, want exactly one", writes)
	}

	begin := time.Now()
	w.Set(name, "AlphaReady", ready("AlphaReady", plugins.ConditionFalse))
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		c := plugins.FindCondition(getProfile(t, name).Status.Conditions, "AlphaReady")
		return c != nil && c.Status == plugins.ConditionFalse, fmt.Sprintf("AlphaReady %v", c)
	})
	if took := time.Since(begin); took > 30*time.Second {
		t.Errorf("a change to a Profile with every condition took %s, as if it waited for a plugin", took)
	}
}

// A plugin that never reports holds the other conditions back for the wait
// only.
func TestStatusWriterWaitIsBounded(t *testing.T) {
	h := testhost.Start(t, env)
	name := "bounded-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)
	const wait = 2 * time.Second
	w := startStatusWriter(t, h, 50*time.Millisecond, reconcilers.WithStatusWait(wait))
	w.Expect("SilentReady", func(p *kubeflowv1.Profile) bool { return p.Name == name })

	begin := time.Now()
	w.Set(name, "AlphaReady", &kubeflowv1.ProfileCondition{Type: "AlphaReady", Status: plugins.ConditionTrue, Message: "m"})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		got := pluginConditions(getProfile(t, name))
		return len(got) == 1, fmt.Sprintf("conditions %v", got)
	})
	if took := time.Since(begin); took < wait {
		t.Errorf("written after %s, before the wait of %s for SilentReady was over", took, wait)
	}
}
