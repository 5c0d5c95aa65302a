package outside

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/profilekit/profilekit/plugins"
)

// DefaultTimeout bounds one outside call unless the host sets another.
const DefaultTimeout = 30 * time.Second

// Options are the host's settings for outside calls of one plugin.
type Options struct {
	// Reverify is how long a recorded state is trusted before Ensure calls
	// the outside system again to repair drift made by hand. Each piece's
	// period is stretched by up to 10%, so that Profiles spread out. Zero
	// means never: only a change or AnnotationReverify calls again.
	Reverify time.Duration
	// Timeout bounds each outside call. Zero means DefaultTimeout.
	Timeout time.Duration
	// Namespace holds the records: the host's own namespace, where no
	// tenant may write. Empty means DefaultRecordsNamespace.
	Namespace string
}

// Error is a failed call to an outside system. It is retried with
// backoff; its reason names the system, such as AzureBlobError.
type Error struct {
	// System is the outside system, such as AzureBlob or PostgreSQL.
	System string
	// Err is the call's error.
	Err error
}

// Error returns the system and the call's error.
func (e *Error) Error() string { return e.System + ": " + e.Err.Error() }

// Unwrap returns the call's error.
func (e *Error) Unwrap() error { return e.Err }

// Reason returns <System>Error, the reason of the condition and the Event.
func (e *Error) Reason() string { return e.System + "Error" }

// Call runs fn as one outside call, with the timeout and the metric, without
// consulting the record: for reads and for Revoke.
func (o *Outside) Call(ctx context.Context, system string, fn func(context.Context) error) error {
	if o.offline {
		o.skip(system, "")
		return nil
	}
	return o.call(ctx, system, fn)
}

// CallGate stands before and after every outside call of a plugin, for
// tests that perturb them (plugins/plugintest).
type CallGate struct {
	// Before runs before a call; an error fails the call, which is not
	// made.
	Before func(system string) error
	// After runs after a call was made and returns its result, or another:
	// an error for a call that succeeded is a call made whose answer was
	// lost.
	After func(system string, err error) error
}

// WithCallGate puts g before and after every outside call.
func WithCallGate(g CallGate) Option {
	return func(o *Outside) { o.gate = g }
}

// call runs fn with the timeout and counts it by plugin, system and result.
func (o *Outside) call(ctx context.Context, system string, fn func(context.Context) error) error {
	if o.gate.Before != nil {
		if err := o.gate.Before(system); err != nil {
			return &Error{System: system, Err: err}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	start := time.Now()
	err := fn(ctx)
	if o.gate.After != nil {
		err = o.gate.After(system, err)
	}
	outsideSeconds.WithLabelValues(o.kind, system).Observe(time.Since(start).Seconds())
	result := "ok"
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		result = "timeout"
	default:
		result = "error"
	}
	outsideCalls.WithLabelValues(o.kind, system, result).Inc()
	if err == nil {
		return nil
	}
	var record *recordError
	if plugins.IsTerminal(err) || errors.As(err, &record) {
		return err
	}
	if result == "timeout" {
		err = fmt.Errorf("no answer within %s: %w", o.opts.Timeout, err)
	}
	return &Error{System: system, Err: err}
}

// hashOf returns a short stable hash of v's JSON encoding. Maps encode with
// sorted keys, so equal values hash alike.
func hashOf(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode desired state: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12]), nil
}
