package reconcilers

import (
	"context"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// TestWriteAtOnceOnlyOnACaughtUpCache follows the writer's memory of its
// last write: a Profile read before that write waits for the delay, one
// read after it is written at once and the memory goes, and a Profile that
// is gone is forgotten.
func TestWriteAtOnceOnlyOnACaughtUpCache(t *testing.T) {
	w := &StatusWriter{
		delay:    time.Hour,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		pending:  map[string]map[string]*kubeflowv1.ProfileCondition{},
		since:    map[string]time.Time{},
		written:  map[string]string{"team": "7"},
		expected: map[string]func(*kubeflowv1.Profile) bool{"QuotasReady": func(*kubeflowv1.Profile) bool { return true }},
		reported: map[string]time.Time{},
	}
	defer w.queue.ShutDown()
	at := func(rv string) *kubeflowv1.Profile {
		return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", ResourceVersion: rv}}
	}
	ready := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionTrue}

	if !w.setFor("team", at("6"), "QuotasReady", ready) {
		t.Error("a first condition is not new")
	}
	if n := w.queue.Len(); n != 0 {
		t.Fatalf("a Profile read before the last write was queued at once (%d queued), want it held for the delay", n)
	}
	if _, ok := w.written["team"]; !ok {
		t.Fatal("the memory of the last write went before the cache showed it")
	}

	if w.setFor("team", at("7"), "QuotasReady", ready) {
		t.Error("the condition waiting to be written already is new again: its pass would record a second Event")
	}
	if n := w.queue.Len(); n != 1 {
		t.Fatalf("%d queued, want the Profile read after the last write queued at once", n)
	}
	if _, ok := w.written["team"]; ok {
		t.Error("the memory of the last write stays after the cache showed it")
	}

	w.written["team"] = "7"
	item, _ := w.queue.Get()
	w.queue.Done(item)
	w.setFor("team", at("12"), "QuotasReady", ready)
	if _, ok := w.written["team"]; ok || w.queue.Len() != 1 {
		t.Errorf("a Profile written by someone else since (rv 12 > 7): memory kept %v, %d queued; want it gone and the Profile queued at once", ok, w.queue.Len())
	}

	w.written["gone"] = "9"
	w.forget("gone")
	if len(w.written) != 0 {
		t.Errorf("written = %v, want nothing left of a Profile that is gone", w.written)
	}
}

// TestFlushFromABehindCacheReadsInsteadOfWriting: the cache still shows the
// Profile from before the writer's last write, without the condition that
// write set. Writing from it would send a status write the API server
// refuses (or, with a resync under way, a write for nothing); the writer
// reads the API server's copy, finds the condition there, and writes
// nothing.
func TestFlushFromABehindCacheReadsInsteadOfWriting(t *testing.T) {
	s := runtime.NewScheme()
	if err := kubeflowv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ready := kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionTrue, Message: "quota applied"}
	stale := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	live := stale.DeepCopy()
	live.Status.Conditions = []kubeflowv1.ProfileCondition{ready, readyCondition(0, []kubeflowv1.ProfileCondition{ready}, []string{"QuotasReady"})}

	var updates int
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(stale).WithStatusSubresource(stale).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				updates++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	apiServer := fake.NewClientBuilder().WithScheme(s).WithObjects(live).WithStatusSubresource(live).Build()
	var cached kubeflowv1.Profile
	if err := cache.Get(t.Context(), client.ObjectKey{Name: "team"}, &cached); err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.Atoi(cached.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}

	w := &StatusWriter{
		client: cache, reader: apiServer, delay: time.Hour,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		pending:  map[string]map[string]*kubeflowv1.ProfileCondition{"team": {"QuotasReady": &ready}},
		since:    map[string]time.Time{"team": time.Now()},
		written:  map[string]string{"team": strconv.Itoa(rv + 1)},
		expected: map[string]func(*kubeflowv1.Profile) bool{"QuotasReady": func(*kubeflowv1.Profile) bool { return true }},
		reported: map[string]time.Time{},
	}
	defer w.queue.ShutDown()
	if err := w.flush(t.Context(), "team"); err != nil {
		t.Fatal(err)
	}
	if updates != 0 {
		t.Errorf("%d status writes from a cache behind the last write, want 0 (the API server's copy already holds the condition)", updates)
	}
	if _, left := w.pending["team"]; left {
		t.Error("the condition is still pending after the flush")
	}

	// The same flush with the cache caught up and the condition missing
	// there writes, so the test above can fail.
	w.written = map[string]string{}
	w.pending["team"] = map[string]*kubeflowv1.ProfileCondition{"QuotasReady": &ready}
	w.since["team"] = time.Now()
	if err := w.flush(t.Context(), "team"); err != nil {
		t.Fatal(err)
	}
	if updates != 1 {
		t.Errorf("%d status writes from a caught-up cache missing the condition, want 1", updates)
	}
}
