package plugins

import "time"

// LaterError is a problem that a host looks at again after a set time,
// not at once with backoff: an object another controller keeps changing
// back, which the host leaves alone for a while rather than write it in a
// loop. Hosts report it in the plugin's condition (status False) and an
// Event, as any failure, and pass the Profile again after After.
type LaterError struct {
	reason string
	after  time.Duration
	err    error
}

// Later wraps err as a LaterError with reason, to be looked at again after
// after.
func Later(reason string, after time.Duration, err error) error {
	return &LaterError{reason: reason, after: after, err: err}
}

// Error returns the wrapped error's message, without the reason.
func (e *LaterError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *LaterError) Unwrap() error { return e.err }

// Reason is the reason of the plugin's condition (see ReasonOf).
func (e *LaterError) Reason() string { return e.reason }

// After is how long the host waits before it passes the Profile again.
func (e *LaterError) After() time.Duration { return e.after }

// RetryAfter reports when a host passes again a Profile whose pass failed
// with err: ok when every error err joins is a LaterError or terminal, at
// least one a LaterError, with the shortest of their delays. Any other
// error in err makes the whole retried at once, with backoff; all terminal
// waits for a change.
func RetryAfter(err error) (time.Duration, bool) {
	d, later, ok := retryAfter(err)
	return d, ok && later
}

// retryAfter is RetryAfter's walk: ok false when err holds an error that
// is neither terminal nor a LaterError; later when it holds a LaterError,
// d the shortest delay.
func retryAfter(err error) (d time.Duration, later, ok bool) {
	switch e := err.(type) {
	case nil:
		return 0, false, false
	case *LaterError:
		return e.after, true, true
	case *TerminalError:
		return 0, false, true
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			di, li, oki := retryAfter(inner)
			if !oki {
				return 0, false, false
			}
			if li && (!later || di < d) {
				d, later = di, true
			}
		}
		return d, later, len(errs) > 0
	case interface{ Unwrap() error }:
		return retryAfter(e.Unwrap())
	}
	return 0, false, false
}
