package plugins

import (
	"errors"
	"fmt"
)

// Reasons name why a plugin's condition has its status. They lead the
// condition message and are the reasons of the Events on the Profile.
const (
	ReasonApplied        = "Applied"
	ReasonRevoked        = "Revoked"
	ReasonInvalidSpec    = "InvalidSpec"
	ReasonInvalidLabel   = "InvalidLabel"
	ReasonInvalidConfig  = "InvalidConfig"
	ReasonConflict       = "Conflict"
	ReasonApplyFailed    = "ApplyFailed"
	ReasonRevokeFailed   = "RevokeFailed"
	ReasonFinalizeFailed = "FinalizeFailed"
	// ReasonWaiting is a pass that waits for something (Result.Wait).
	ReasonWaiting = "Waiting"
	// ReasonPaused is a plugin paused for the Profile (AnnotationPaused).
	ReasonPaused = "Paused"
	// ReasonIdentityNotAllowed is a Profile that names a cloud identity the
	// host's allowances do not give it (the cloud identity plugins).
	ReasonIdentityNotAllowed = "IdentityNotAllowed"
	// ReasonContested is an object of the plugin that another writer keeps
	// changing back: the host leaves it as that writer made it for a while
	// (see the apply package's RepairGate).
	ReasonContested = "Contested"
)

// TerminalError is input that cannot succeed until it changes: an invalid
// spec or label, or an object of ours that someone else already holds. Hosts
// report it in the plugin's condition and an Event, and do not retry it until
// the Profile changes or the next resync; the standalone host hands it to
// controller-runtime as a reconcile.TerminalError, which counts it.
type TerminalError struct {
	// Reason is a CamelCase word such as InvalidSpec.
	Reason string
	// Err is the problem, worded for the Profile's author.
	Err error
}

// Terminal wraps err as a TerminalError with the given reason.
func Terminal(reason string, err error) error {
	return &TerminalError{Reason: reason, Err: err}
}

// Terminalf formats a TerminalError with the given reason.
func Terminalf(reason, format string, args ...any) error {
	return &TerminalError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Error returns the wrapped error's message, without the reason.
func (e *TerminalError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *TerminalError) Unwrap() error { return e.Err }

// IsTerminal reports whether err is terminal: a TerminalError, or a join of
// errors that are all terminal. One transient error in a join makes the whole
// retryable.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	if te, ok := err.(*TerminalError); ok && te != nil {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if !IsTerminal(e) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return IsTerminal(u.Unwrap())
	}
	return false
}

// ReasonOf returns the reason of the first TerminalError in err, else of the
// first error with a Reason method (a failed outside call names its system
// so), or fallback.
func ReasonOf(err error, fallback string) string {
	var te *TerminalError
	if errors.As(err, &te) {
		return te.Reason
	}
	var r interface{ Reason() string }
	if errors.As(err, &r) {
		return r.Reason()
	}
	return fallback
}
