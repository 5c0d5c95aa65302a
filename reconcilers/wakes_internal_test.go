package reconcilers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A pass counts under the first trigger that asked for it since the last
// pass began; a pass nothing asked for is a requeue; every ask counts as a
// wake, however many one pass serves.
func TestWakesCountPassesByTheirFirstTrigger(t *testing.T) {
	kind := "wakes-test"
	w := newWakes(kind)
	reconciles := func(trigger string) float64 {
		return testutil.ToFloat64(reconcilesTotal.WithLabelValues(kind, trigger))
	}
	asks := func(trigger string) float64 { return testutil.ToFloat64(wakesTotal.WithLabelValues(kind, trigger)) }

	w.ask("a", triggerProfile)
	w.ask("a", triggerOwned+"ConfigMap") // served by the same pass
	w.ask("b", triggerResync)
	w.pass("a")
	w.pass("b")
	w.pass("a") // nothing asked since the last pass of a
	w.ask("a", triggerOwned+"ConfigMap")
	w.pass("a")

	got := map[string][2]float64{}
	for _, tr := range []string{triggerProfile, triggerOwned + "ConfigMap", triggerResync, triggerRequeue} {
		got[tr] = [2]float64{reconciles(tr), asks(tr)}
	}
	want := map[string][2]float64{
		triggerProfile:             {1, 1},
		triggerOwned + "ConfigMap": {1, 2},
		triggerResync:              {1, 1},
		triggerRequeue:             {1, 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reconciles and wakes by trigger (-want +got):\n%s", d)
	}
	if n := len(w.first); n != 0 {
		t.Errorf("%d Profiles still remembered after their passes", n)
	}
}

// A nil wakes, as a Reconciler built without New has, counts nothing and
// does not fail.
func TestNilWakesCountNothing(t *testing.T) {
	var w *wakes
	w.ask("a", triggerProfile)
	w.pass("a")
}
