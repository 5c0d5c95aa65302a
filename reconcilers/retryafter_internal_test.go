package reconcilers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/profilekit/profilekit/plugins"
)

// heldBack is an error with a delay, as the Applier's for an object its
// RepairGate heldBack back.
type heldBack time.Duration

func (h heldBack) Error() string             { return "held back" }
func (h heldBack) RetryAfter() time.Duration { return time.Duration(h) }
func (h heldBack) Reason() string            { return plugins.ReasonContested }

func TestRetryAfter(t *testing.T) {
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
		{name: "heldBack", err: heldBack(time.Minute), want: time.Minute, found: true},
		{name: "wrapped", err: fmt.Errorf("core: %w", heldBack(time.Minute)), want: time.Minute, found: true},
		{name: "the shortest of two", err: errors.Join(heldBack(time.Minute), heldBack(30*time.Second)), want: 30 * time.Second, found: true},
		{name: "beside a terminal one", err: errors.Join(terminal, heldBack(time.Minute)), want: time.Minute, found: true},
		{name: "a transient one is retried at once", err: errors.Join(heldBack(time.Minute), errors.New("timeout"))},
		{name: "empty join", err: errors.Join(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := retryAfter(tc.err)
			if got != tc.want || found != tc.found {
				t.Errorf("retryAfter(%v) = %s, %v; want %s, %v", tc.err, got, found, tc.want, tc.found)
			}
		})
	}
}
