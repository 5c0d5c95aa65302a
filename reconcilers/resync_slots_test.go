package reconcilers

import (
	"fmt"
	"testing"
	"time"
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
