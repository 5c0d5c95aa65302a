package outside_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

func TestOutsideReverify(t *testing.T) {
	c := outsideClient(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	opts := outside.Options{Reverify: 6 * time.Hour}
	desired := map[string]any{"role": "r"}
	got := calls{}

	pass(t, outside.New(c, "db", newProfile(nil), opts, outside.WithClock(clock)), got, desired)
	now = now.Add(6 * time.Hour) // within the 10% stretch at the earliest
	pass(t, outside.New(c, "db", newProfile(nil), opts, outside.WithClock(clock)), got, desired)
	if got["role"] != 1 {
		t.Errorf("calls at the period's end = %d, want 1 (the period is stretched, never shortened)", got["role"])
	}
	now = now.Add(37 * time.Minute) // past any stretch of up to 10%
	pass(t, outside.New(c, "db", newProfile(nil), opts, outside.WithClock(clock)), got, desired)
	if got["role"] != 2 {
		t.Errorf("calls past the stretched period = %d, want 2", got["role"])
	}

	// The manual trigger calls again at once, and once only per value.
	trigger := map[string]string{plugins.AnnotationReverify: "now"}
	pass(t, outside.New(c, "db", newProfile(trigger), opts, outside.WithClock(clock)), got, desired)
	pass(t, outside.New(c, "db", newProfile(trigger), opts, outside.WithClock(clock)), got, desired)
	if got["role"] != 3 {
		t.Errorf("calls after the trigger twice = %d, want 3", got["role"])
	}
}

// Each piece's period is stretched by a fraction of up to 10%, stable per
// Profile and key, so that Profiles made in one moment do not all call
// their outside systems again in one moment.
func TestOutsideReverifySpreadsProfiles(t *testing.T) {
	c := outsideClient(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	opts := outside.Options{Reverify: 10 * time.Hour}
	got := calls{}
	round := func() int {
		before := got["role"]
		for i := range 20 {
			p := newProfile(nil)
			p.Name, p.UID = fmt.Sprintf("team-%d", i), types.UID(fmt.Sprintf("u%d", i))
			pass(t, outside.New(c, "db", p, opts, outside.WithClock(clock)), got, map[string]any{"role": "r"})
		}
		return got["role"] - before
	}
	if n := round(); n != 20 {
		t.Fatalf("first round: %d calls, want 20", n)
	}
	now = start.Add(10*time.Hour + 30*time.Minute) // half of the longest stretch
	early := round()
	if early == 0 || early == 20 {
		t.Errorf("half-way through the stretch: %d of 20 Profiles called again, want some and not all", early)
	}
	now = start.Add(11*time.Hour + time.Minute)
	if n := round(); n != 20-early {
		t.Errorf("past the longest stretch: %d Profiles called again, want the %d not called half-way", n, 20-early)
	}
}
