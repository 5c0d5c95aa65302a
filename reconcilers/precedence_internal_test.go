package reconcilers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// TestUrgentPasses: which passes go first, and which are expected only to
// confirm, by what the Profile shows of the plugin.
func TestUrgentPasses(t *testing.T) {
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "demo"}}
	ct := def.Condition()
	profile := func(gen int64, listed bool, conds ...kubeflowv1.ProfileCondition) *kubeflowv1.Profile {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: gen}}
		if listed {
			p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: "demo"}}}
		}
		p.Status.Conditions = conds
		return p
	}
	ready := kubeflowv1.ProfileCondition{Type: ct, Status: plugins.ConditionTrue, ObservedGeneration: 3}
	failed := kubeflowv1.ProfileCondition{Type: ct, Status: plugins.ConditionFalse, ObservedGeneration: 3}
	other := kubeflowv1.ProfileCondition{Type: "OtherReady", Status: plugins.ConditionTrue, ObservedGeneration: 3}
	deleting := profile(3, true, ready)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	withFinalizer := profile(3, false)
	withFinalizer.Finalizers = []string{plugins.FinalizerPrefix + "demo"}

	cases := []struct {
		name    string
		p       *kubeflowv1.Profile
		outside bool
		writing bool
		want    bool
	}{
		{name: "in sync", p: profile(3, true, ready, other), want: false},
		{name: "never served", p: profile(1, true, other), want: true},
		{name: "failing", p: profile(3, true, failed), want: true},
		{name: "spec changed since", p: profile(4, true, ready), want: true},
		{name: "being deleted", p: deleting, want: true},
		{name: "in sync, plugin writing", p: profile(3, true, ready), writing: true, want: true},
		{name: "not listed, never was", p: profile(3, false, other), want: false},
		{name: "not listed, condition left", p: profile(3, false, ready), want: true},
		{name: "not listed, finalizer left", p: withFinalizer, outside: true, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := def
			d.OutsideState = c.outside
			r := &Reconciler{def: d, selector: labels.Nothing()}
			if c.writing {
				for range 8 {
					r.recent.record(true)
				}
			}
			if got := r.urgent(c.p); got != c.want {
				t.Errorf("urgent = %v, want %v", got, c.want)
			}
		})
	}
}

// TestRecentWrites: a plugin counts as writing while a quarter or more of
// its last 32 passes wrote, and stops once its passes have confirmed long
// enough.
func TestRecentWrites(t *testing.T) {
	var w recentWrites
	for range 7 {
		w.record(true)
	}
	if w.writing() {
		t.Fatal("7 writes of 32 passes count as writing")
	}
	w.record(true)
	if !w.writing() {
		t.Fatal("8 writes of the last 32 passes do not count as writing")
	}
	for range 24 {
		w.record(false)
	}
	if !w.writing() {
		t.Fatal("8 writes among the last 32 passes no longer count")
	}
	w.record(false)
	if w.writing() {
		t.Fatal("a write 33 passes ago still counts")
	}
}

// TestPrecedenceYield: a confirming pass goes at once with no urgent pass
// under way, waits for the last one to end, and waits no longer than the
// bound or its context.
func TestPrecedenceYield(t *testing.T) {
	p := NewPrecedence(time.Minute)
	if d := first(p.yield(t.Context(), nil, time.Hour)); d != 0 {
		t.Fatalf("waited %s with nothing urgent", d)
	}
	end1, end2 := p.begin(), p.begin()
	done := make(chan time.Duration)
	go func() { done <- first(p.yield(t.Context(), nil, time.Hour)) }()
	end1()
	select {
	case d := <-done:
		t.Fatalf("went after %s with an urgent pass still under way", d)
	case <-time.After(100 * time.Millisecond):
	}
	end2()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after the last urgent pass ended")
	}

	end := p.begin()
	defer end()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if d := first(p.yield(ctx, nil, time.Hour)); d > 5*time.Second {
		t.Fatalf("waited %s past its context", d)
	}
	short := NewPrecedence(50 * time.Millisecond)
	endShort := short.begin()
	defer endShort()
	if d := first(short.yield(t.Context(), nil, time.Hour)); d < 50*time.Millisecond || d > 5*time.Second {
		t.Fatalf("waited %s, want the bound of 50ms", d)
	}
	if d := first(NewPrecedence(0).yield(t.Context(), nil, time.Hour)); d != 0 {
		t.Fatalf("waited %s with no bound", d)
	}
}

// first returns a yield's wait alone.
func first(waited time.Duration, _ bool) time.Duration { return waited }

// TestDeferrals: a confirmation that gave its worker up keeps the time of
// its first wait until it runs or turns urgent.
func TestDeferrals(t *testing.T) {
	var d deferrals
	if got := d.since("a"); time.Since(got) > time.Second {
		t.Fatalf("a Profile never deferred waits since %s, want now", got)
	}
	first := time.Now().Add(-700 * time.Millisecond)
	d.keep("a", first)
	if got := d.since("a"); !got.Equal(first) {
		t.Errorf("since = %s, want the first wait %s", got, first)
	}
	d.end("a")
	if got := d.since("a"); got.Equal(first) {
		t.Error("the first wait is still kept after the confirmation ran")
	}
	p := NewPrecedence(time.Second)
	defer p.begin()()
	if waited, woken := p.yield(t.Context(), nil, time.Second-time.Since(first)); woken || waited > 900*time.Millisecond {
		t.Errorf("waited %s (woken %t), want at most the 300ms left of the bound", waited, woken)
	}
	fresh := make(chan struct{})
	go func() { fresh <- struct{}{} }()
	if _, woken := p.yield(t.Context(), fresh, time.Minute); !woken {
		t.Error("fresh work did not wake the wait")
	}
}

// TestNothingToDoGoesAtOnce: while an urgent pass is under way, a pass of
// a plugin that does not apply to the Profile and left nothing on it runs
// at once (it does nothing), where a confirming pass of a plugin that
// applies waits its turn.
func TestNothingToDoGoesAtOnce(t *testing.T) {
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "demo"}}
	ready := kubeflowv1.ProfileCondition{Type: def.Condition(), Status: plugins.ConditionTrue, ObservedGeneration: 1}
	listed := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "listed", Generation: 1}}
	listed.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: "demo"}}}
	listed.Status.Conditions = []kubeflowv1.ProfileCondition{ready}
	unlisted := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "unlisted", Generation: 1}}

	prec := NewPrecedence(time.Hour)
	end := prec.begin() // an urgent pass of another plugin
	defer end()
	s := runtime.NewScheme()
	if err := kubeflowv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// The pass that waited reads its Profile again.
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(listed.DeepCopy()).Build()
	r := &Reconciler{def: def, selector: labels.Nothing(), precedence: prec, fresh: make(chan struct{}), client: c}

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	done, later, err := r.takeTurn(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: unlisted.Name}}, unlisted)
	if done == nil || err != nil || later != (reconcile.Result{}) {
		t.Fatalf("a pass with nothing to do: end %v, later %+v, err %v; want it to run now", done != nil, later, err)
	}
	done()
	if waited := time.Since(start); waited > 100*time.Millisecond {
		t.Errorf("a pass with nothing to do waited %s for the urgent pass", waited)
	}
	// The confirming pass of a plugin that applies yields until ctx ends.
	start = time.Now()
	if done, _, _ := r.takeTurn(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: listed.Name}}, listed); done != nil {
		defer done()
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("a confirming pass waited %s, want it to yield to the urgent pass", waited)
	}
}
