package reconcilers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRepairsBackOff follows one object that another writer changes back
// after every repair, on a clock the test moves: three repairs, then
// back-offs that double, one repair after each, up to the bound; a repair
// that holds starts afresh.
func TestRepairsBackOff(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := newRepairs("test")
	r.now = func() time.Time { return clock }
	obj := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}
	other := obj.DeepCopy()
	other.Name = "y"

	// step asks for a repair after d and checks the answer.
	step := func(d time.Duration, wantOK bool, wantFor time.Duration) {
		t.Helper()
		clock = clock.Add(d)
		hold, ok := r.Repair(obj)
		if ok != wantOK || hold.For != wantFor {
			t.Fatalf("at +%s: Repair = %+v, %v; want ok %v, held for %s", d, hold, ok, wantOK, wantFor)
		}
	}
	for range RepairsBeforeBackoff {
		step(time.Second, true, 0)
	}
	step(time.Second, false, RepairBackoff)
	if _, ok := r.Repair(other); !ok {
		t.Fatal("another object is held back with the contested one")
	}
	step(10*time.Second, false, RepairBackoff) // still held
	step(RepairBackoff, true, 0)               // the back-off passed: once more
	step(time.Second, false, 2*RepairBackoff)  // undone at once: twice as long
	step(2*RepairBackoff, true, 0)
	// Undone each time: the back-off doubles up to its bound, so a writer
	// that never stops gets about two writes an hour.
	writes := 0
	for i := 0; i < 40; i++ {
		clock = clock.Add(time.Second)
		hold, ok := r.Repair(obj)
		if ok {
			t.Fatalf("repair %d let through while the other writer undoes each one", i)
		}
		if hold.For > MaxRepairBackoff {
			t.Fatalf("held for %s, more than the bound %s", hold.For, MaxRepairBackoff)
		}
		clock = clock.Add(hold.Left)
		if _, ok := r.Repair(obj); !ok {
			t.Fatalf("after the hold of %s: the repair is not let through", hold.For)
		}
		writes++
	}
	if hold, _ := r.Repair(obj); hold.For != MaxRepairBackoff {
		t.Errorf("after %d rounds held for %s, want the bound %s", writes, hold.For, MaxRepairBackoff)
	}
	// The other writer stops: the repair after the hold holds, and a
	// change an hour later is put back at once, three times, as the first.
	_, _ = r.Repair(obj)
	clock = clock.Add(MaxRepairBackoff)
	step(0, true, 0)
	step(time.Hour, true, 0)
	step(time.Second, true, 0)
	step(time.Second, true, 0)
	step(time.Second, false, RepairBackoff)
	if n := len(r.objects); n != 1 {
		t.Errorf("%d episodes kept, want 1: the other object's ended and is forgotten", n)
	}
}
