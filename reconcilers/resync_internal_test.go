package reconcilers

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

func TestSlotsFor(t *testing.T) {
	cases := []struct {
		reason string
		period time.Duration
		want   int
	}{
		{"the default period has every slot", DefaultResync, resyncSlots},
		{"a period of exactly the slots' minimum each", resyncSlots * minResyncSlot, resyncSlots},
		{"a short period has slots of the minimum length", time.Second, 10},
		{"a period shorter than one slot has one", 50 * time.Millisecond, 1},
	}
	for _, c := range cases {
		if got := slotsFor(c.period); got != c.want {
			t.Errorf("%s: slotsFor(%s) = %d, want %d", c.reason, c.period, got, c.want)
		}
	}
}

// Profiles spread evenly over the slots of a period, whatever their names
// look like, and each keeps its slot.
func TestSlotOfSpreadsProfiles(t *testing.T) {
	const profiles = 6000
	for _, format := range []string{"team-%d", "user%05d", "%d-lab"} {
		counts := make([]int, resyncSlots)
		for i := range profiles {
			name := fmt.Sprintf(format, i)
			s := slotOf(name, resyncSlots)
			if again := slotOf(name, resyncSlots); again != s {
				t.Fatalf("%s: slot %d, then %d", name, s, again)
			}
			counts[s]++
		}
		mean := profiles / resyncSlots
		for s, n := range counts {
			if n < mean*6/10 || n > mean*14/10 {
				t.Errorf("names like %q: slot %d has %d Profiles, want %d +/- 40%%", format, s, n, mean)
			}
		}
	}
}

// The timer stays quiet for the first period, when the controller's first
// pass has just reconciled every Profile, then brings each Profile back
// within the next one.
func TestResyncTimerWaitsAPeriodThenBringsEveryProfile(t *testing.T) {
	const period = time.Second
	s := runtime.NewScheme()
	if err := kubeflowv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	names := []string{"ada", "grace", "linus", "margaret"}
	b := fake.NewClientBuilder().WithScheme(s)
	for _, n := range names {
		b = b.WithObjects(&kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	r := &Reconciler{
		def:    plugins.Definition{Plugin: plugins.Funcs{KindName: "ticker"}},
		client: b.Build(), shard: labels.Everything(), resync: period,
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	go r.runResync(t.Context(), q)

	time.Sleep(period * 8 / 10)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d Profiles enqueued within the first period, want none", n)
	}
	time.Sleep(period + period*5/10)
	got := map[string]bool{}
	for q.Len() > 0 {
		req, _ := q.Get()
		got[req.Name] = true
		q.Done(req)
	}
	for _, n := range names {
		if !got[n] {
			t.Errorf("%s was not enqueued in the second period (got %v)", n, got)
		}
	}
}
