package reconcilers

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// TestNewestFirstOrder: items without a priority of their own go by their
// Profile's creation, newest first, before the low-priority resync, whose
// item gets raised when an event for it comes; an item for a Profile that
// is gone goes at the default priority, still before the resync.
func TestNewestFirstOrder(t *testing.T) {
	s := runtime.NewScheme()
	if err := kubeflowv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	created := func(name string, ago time.Duration) *kubeflowv1.Profile {
		return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Now().Add(-ago))}}
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(
		created("old", time.Hour), created("older", 2*time.Hour), created("new", time.Second), created("resynced", 3*time.Hour),
	).Build()
	q := newestFirstQueue("test", workqueue.DefaultTypedControllerRateLimiter[string](), reader, logr.Discard(), func(s string) string { return s })
	defer q.ShutDown()

	low := handler.LowPriority
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, "resynced", "idle")
	q.Add("older")
	q.Add("gone")
	q.Add("old")
	q.Add("new")
	q.Add("idle") // an event raises the resync's item
	var got []string
	for range 6 {
		item, _ := q.Get()
		got = append(got, item)
		q.Done(item)
	}
	want := []string{"new", "old", "older", "gone", "idle", "resynced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestFreshWork: only items to be served now at their Profile's priority
// (events) count as fresh work; a delay, a retry and an item that names its
// own priority (the resync, the restart's initial list) do not.
func TestFreshWork(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	q := newestFirstQueue("test", workqueue.DefaultTypedControllerRateLimiter[string](), reader, logr.Discard(), func(s string) string { return s })
	defer q.ShutDown()
	fresh := 0
	q.fresh = func() { fresh++ }

	low := handler.LowPriority
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, "resynced")
	q.AddAfter("later", time.Hour)
	q.AddRateLimited("retried")
	if fresh != 0 {
		t.Fatalf("%d fresh items from a resync, a delay and a retry, want 0", fresh)
	}
	q.Add("event")
	q.AddWithOpts(priorityqueue.AddOpts{}, "a", "b")
	if fresh != 3 {
		t.Errorf("%d fresh items from three events, want 3", fresh)
	}
}
