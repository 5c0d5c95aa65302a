package reconcilers

import (
	"time"

	"github.com/profilekit/profilekit/plugins"
)

// retryAfter reports when the Reconciler passes again a Profile whose pass
// failed with err: ok when every error err joins has a method
// RetryAfter() time.Duration (an object left alone for a while, see the
// apply package's RepairGate) or is terminal, at least one the former,
// with the shortest of their delays. Any other error in err makes the
// whole retried at once, with backoff; all terminal waits for a change.
func retryAfter(err error) (time.Duration, bool) {
	d, later, ok := walkRetryAfter(err)
	return d, ok && later
}

// walkRetryAfter is retryAfter's walk: ok false when err holds an error
// that is neither terminal nor has a delay; later when it holds one with a
// delay, d the shortest.
func walkRetryAfter(err error) (d time.Duration, later, ok bool) {
	switch e := err.(type) {
	case nil:
		return 0, false, false
	case interface{ RetryAfter() time.Duration }:
		return e.RetryAfter(), true, true
	case *plugins.TerminalError:
		return 0, false, true
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			di, li, oki := walkRetryAfter(inner)
			if !oki {
				return 0, false, false
			}
			if li && (!later || di < d) {
				d, later = di, true
			}
		}
		return d, later, len(errs) > 0
	case interface{ Unwrap() error }:
		return walkRetryAfter(e.Unwrap())
	}
	return 0, false, false
}
