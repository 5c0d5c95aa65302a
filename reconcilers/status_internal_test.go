package reconcilers

import (
	"context"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	s := profileScheme(t)
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

// TestConditionsOfAnEarlierProfileOfTheName: alice's Profile was deleted
// and mallory registered its name while a pass over alice's was under
// way. The condition that pass set says what alice had (True: granted);
// written on mallory's Profile it would say mallory has it. The writer
// drops it whichever comes first, and writes mallory's own.
func TestConditionsOfAnEarlierProfileOfTheName(t *testing.T) {
	s := profileScheme(t)
	alice := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "alice", ResourceVersion: "5"}}
	mallory := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "mallory", ResourceVersion: "10"}}
	granted := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionTrue, Message: "Applied: granted"}
	conflict := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionFalse, Message: "Conflict: the name is held"}

	for _, tc := range []struct {
		name string
		sets func(w *StatusWriter)
		want *kubeflowv1.ProfileCondition // what mallory's Profile carries after the flush
	}{
		{"alice's alone", func(w *StatusWriter) { w.setFor("team", alice, "QuotasReady", granted) }, nil},
		{"alice's, then mallory's", func(w *StatusWriter) {
			w.setFor("team", alice, "QuotasReady", granted)
			w.setFor("team", mallory, "QuotasReady", conflict)
		}, conflict},
		{"mallory's, then alice's", func(w *StatusWriter) {
			w.setFor("team", mallory, "QuotasReady", conflict)
			if w.setFor("team", alice, "QuotasReady", granted) {
				t.Error("alice's condition, set after mallory's, is new")
			}
		}, conflict},
		{"alice's by the fork", func(w *StatusWriter) { w.setOf(alice, "QuotasReady", granted) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "mallory"}}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(live).WithStatusSubresource(live).Build()
			w := testWriter(t, c, c)
			tc.sets(w)
			if err := w.flush(t.Context(), "team"); err != nil {
				t.Fatal(err)
			}
			var got kubeflowv1.Profile
			if err := c.Get(t.Context(), client.ObjectKey{Name: "team"}, &got); err != nil {
				t.Fatal(err)
			}
			cond := plugins.FindCondition(got.Status.Conditions, "QuotasReady")
			switch {
			case tc.want == nil && cond != nil:
				t.Errorf("mallory's Profile carries %s=%s %s, set by a pass over alice's", cond.Type, cond.Status, cond.Message)
			case tc.want != nil && (cond == nil || cond.Status != tc.want.Status || cond.Message != tc.want.Message):
				t.Errorf("mallory's Profile carries %+v, want %s=%s %s", cond, tc.want.Type, tc.want.Status, tc.want.Message)
			}
			if len(w.pending) != 0 || len(w.of) != 0 {
				t.Errorf("left after the flush: pending %v, of %v", w.pending, w.of)
			}
		})
	}
}

// TestConditionsOfALaterProfileWithTheCacheBehind: the cache still shows
// alice's deleted Profile when mallory's conditions are flushed. They are
// mallory's: the writer reads the API server's copy and writes them there,
// rather than dropping them as another Profile's.
func TestConditionsOfALaterProfileWithTheCacheBehind(t *testing.T) {
	s := profileScheme(t)
	live := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "mallory"}}
	apiServer := fake.NewClientBuilder().WithScheme(s).WithObjects(live).WithStatusSubresource(live).Build()
	cache := interceptor.NewClient(apiServer, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			alice := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "alice", ResourceVersion: "5"}}
			alice.DeepCopyInto(obj.(*kubeflowv1.Profile))
			return nil
		},
	})
	w := testWriter(t, cache, apiServer)
	conflict := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionFalse, Message: "Conflict: the name is held"}
	w.setFor("team", &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "mallory", ResourceVersion: "10"}}, "QuotasReady", conflict)
	if err := w.flush(t.Context(), "team"); err != nil {
		t.Fatal(err)
	}
	var got kubeflowv1.Profile
	if err := apiServer.Get(t.Context(), client.ObjectKey{Name: "team"}, &got); err != nil {
		t.Fatal(err)
	}
	if cond := plugins.FindCondition(got.Status.Conditions, "QuotasReady"); cond == nil || cond.Message != conflict.Message {
		t.Errorf("mallory's Profile carries %+v, want its own condition %+v", cond, conflict)
	}
}

// TestConflictOnAProfileReplacedMeanwhile: mallory's Profile was written by
// someone else (a conflict), and between that write and the writer's read
// afresh the name was deleted and registered again. The conditions are
// mallory's, and the Profile now read is not: nothing is written on it.
func TestConflictOnAProfileReplacedMeanwhile(t *testing.T) {
	s := profileScheme(t)
	mallory := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "mallory"}}
	apiServer := fake.NewClientBuilder().WithScheme(s).WithObjects(mallory).WithStatusSubresource(mallory).Build()
	updates := 0
	c := interceptor.NewClient(apiServer, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			updates++
			if updates > 1 {
				return c.SubResource(sub).Update(ctx, obj, opts...)
			}
			// The name changes hands before the writer reads again.
			if err := c.Delete(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
				return err
			}
			if err := c.Create(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "eve"}}); err != nil {
				return err
			}
			return apierrors.NewConflict(kubeflowv1.GroupVersion.WithResource("profiles").GroupResource(), "team", nil)
		},
	})
	w := testWriter(t, c, c)
	granted := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionTrue, Message: "Applied: granted"}
	w.setFor("team", &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "mallory", ResourceVersion: "10"}}, "QuotasReady", granted)
	if err := w.flush(t.Context(), "team"); err != nil {
		t.Fatal(err)
	}
	var got kubeflowv1.Profile
	if err := apiServer.Get(t.Context(), client.ObjectKey{Name: "team"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.UID != "eve" {
		t.Fatalf("the Profile is %s's, want eve's: the test did not replace it", got.UID)
	}
	if cond := plugins.FindCondition(got.Status.Conditions, "QuotasReady"); cond != nil {
		t.Errorf("eve's Profile carries %+v, mallory's condition", cond)
	}
}

// TestFailedWriteGoesBackUnderTheLaterProfile: a write that failed puts its
// conditions back into pending, where a pass over another Profile of the
// name may have set some meanwhile. The later Profile's conditions win
// whole, whichever of the two failed.
func TestFailedWriteGoesBackUnderTheLaterProfile(t *testing.T) {
	alice := incarnation{uid: "alice", rv: "5"}
	mallory := incarnation{uid: "mallory", rv: "10"}
	granted := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionTrue, Message: "Applied: granted"}
	conflict := &kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: plugins.ConditionFalse, Message: "Conflict: the name is held"}
	for _, tc := range []struct {
		name          string
		failed, set   incarnation
		failedC, setC *kubeflowv1.ProfileCondition
		wantUID       string
		wantMessage   string
	}{
		{"mallory's failed, alice's set meanwhile", mallory, alice, conflict, granted, "mallory", conflict.Message},
		{"alice's failed, mallory's set meanwhile", alice, mallory, granted, conflict, "mallory", conflict.Message},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &StatusWriter{pending: map[string]map[string]*kubeflowv1.ProfileCondition{}, since: map[string]time.Time{}}
			w.mu.Lock()
			if !w.ofLocked("team", tc.set) {
				t.Fatal("the pass set meanwhile is refused with nothing pending")
			}
			w.pending["team"] = map[string]*kubeflowv1.ProfileCondition{"QuotasReady": tc.setC}
			w.mu.Unlock()
			w.putBack("team", map[string]*kubeflowv1.ProfileCondition{"QuotasReady": tc.failedC}, tc.failed)
			if got := w.of["team"].uid; string(got) != tc.wantUID {
				t.Errorf("pending conditions are %s's, want %s's", got, tc.wantUID)
			}
			if got := w.pending["team"]["QuotasReady"]; got == nil || got.Message != tc.wantMessage {
				t.Errorf("pending %+v, want %q", got, tc.wantMessage)
			}
		})
	}
}

// testWriter is a StatusWriter over c and r that writes only when a test
// calls flush, expecting no plugin's condition.
func testWriter(t *testing.T, c client.Client, r client.Reader) *StatusWriter {
	t.Helper()
	w := &StatusWriter{
		client: c, reader: r, delay: time.Hour,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		pending:  map[string]map[string]*kubeflowv1.ProfileCondition{},
		since:    map[string]time.Time{},
		written:  map[string]string{},
		expected: map[string]func(*kubeflowv1.Profile) bool{},
		reported: map[string]time.Time{},
	}
	t.Cleanup(w.queue.ShutDown)
	return w
}

// profileScheme is a scheme that knows Profiles.
func profileScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := kubeflowv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
