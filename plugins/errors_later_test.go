package plugins_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/profilekit/profilekit/plugins"
)

func TestRetryAfter(t *testing.T) {
	later := func(d time.Duration) error { return plugins.Later(plugins.ReasonContested, d, errors.New("contested")) }
	terminal := plugins.Terminalf(plugins.ReasonConflict, "not ours")
	for _, tc := range []struct {
		name  string
		err   error
		want  time.Duration
		found bool
	}{
		{name: "nil", err: nil},
		{name: "transient", err: errors.New("timeout")},
		{name: "terminal alone waits for a change", err: terminal},
		{name: "later", err: later(time.Minute), want: time.Minute, found: true},
		{name: "wrapped", err: fmt.Errorf("core: %w", later(time.Minute)), want: time.Minute, found: true},
		{name: "the shortest of two", err: errors.Join(later(time.Minute), later(30*time.Second)), want: 30 * time.Second, found: true},
		{name: "beside a terminal one", err: errors.Join(terminal, later(time.Minute)), want: time.Minute, found: true},
		{name: "a transient one is retried at once", err: errors.Join(later(time.Minute), errors.New("timeout"))},
		{name: "empty join", err: errors.Join(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := plugins.RetryAfter(tc.err)
			if got != tc.want || found != tc.found {
				t.Errorf("RetryAfter(%v) = %s, %v; want %s, %v", tc.err, got, found, tc.want, tc.found)
			}
		})
	}
	if got := plugins.ReasonOf(fmt.Errorf("x: %w", later(time.Second)), plugins.ReasonApplyFailed); got != plugins.ReasonContested {
		t.Errorf("ReasonOf = %s, want %s", got, plugins.ReasonContested)
	}
	if plugins.IsTerminal(later(time.Second)) {
		t.Error("a LaterError is terminal, want it passed again after its delay")
	}
}
