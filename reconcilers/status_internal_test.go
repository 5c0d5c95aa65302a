package reconcilers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

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

	w.setFor("team", at("6"), "QuotasReady", ready)
	if n := w.queue.Len(); n != 0 {
		t.Fatalf("a Profile read before the last write was queued at once (%d queued), want it held for the delay", n)
	}
	if _, ok := w.written["team"]; !ok {
		t.Fatal("the memory of the last write went before the cache showed it")
	}

	w.setFor("team", at("7"), "QuotasReady", ready)
	if n := w.queue.Len(); n != 1 {
		t.Fatalf("%d queued, want the Profile read after the last write queued at once", n)
	}
	if _, ok := w.written["team"]; ok {
		t.Error("the memory of the last write stays after the cache showed it")
	}

	w.written["gone"] = "9"
	w.forget("gone")
	if len(w.written) != 0 {
		t.Errorf("written = %v, want nothing left of a Profile that is gone", w.written)
	}
}
