package apply

// This file holds WithRepairGate, through which a host bounds how often
// the Applier puts back an object another writer keeps changing.

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// RepairGate is asked before the Applier puts back one of its objects that
// someone else changed: a live object that carries the applied hash of what
// the Applier would write, so nothing the plugin wants has changed, and yet
// no longer holds it. Two controllers that each write their own form of one
// object put it back in turn for ever; a gate that refuses after a few
// repairs in a row stops that. The Applier asks it about objects with the
// upstream controller's names only (see WithUpstreamObjects).
type RepairGate interface {
	// Repair reports whether the Applier may put obj back now; when not,
	// the object stays as it is, and hold says for how long.
	Repair(obj client.Object) (hold RepairHold, ok bool)
}

// RepairHold is a repair a RepairGate refused.
type RepairHold struct {
	// Repairs is how many times in a row the object was put back and
	// changed again.
	Repairs int
	// For is how long the object is left alone, from when it was first
	// refused; Left how much of it is left.
	For, Left time.Duration
}

// WithRepairGate makes the Applier ask g before it puts back an object
// someone else changed (see RepairGate). A refused object is Skipped, and
// its error, of reason plugins.ReasonContested (see plugins.ReasonOf),
// names the writer and has a method RetryAfter() time.Duration that says
// when the hold ends, so that a host passes the Profile again then rather
// than at once.
func WithRepairGate(g RepairGate) Option {
	return func(a *Applier) { a.repairs = g }
}

// mayRepair returns nil when the Applier may write u over live, its object,
// and the error to report when its RepairGate holds the write back. A write
// is a repair when live carries u's applied hash: the plugin wants what it
// wrote last, so what changed was changed by someone else.
//
// Only objects with the upstream controller's names, which the core plugin
// writes (WithUpstreamObjects), are ever held back: they are what another
// controller, the upstream one, writes too, and what they hold a tenant
// may already grant by its own rights. Every other object is put back
// each time, so that a tenant who edits a plugin's NetworkPolicy or
// RoleBinding a few times in a row never makes the host leave it as the
// tenant made it.
func (a *Applier) mayRepair(ctx context.Context, live *liveObject, u *unstructured.Unstructured) error {
	hash := appliedHashOf(u)
	if a.repairs == nil || !a.upstream || !plugins.IsUpstreamName(u.GetName()) ||
		appliedHashOf(live.Unstructured) != hash {
		return nil
	}
	hold, ok := a.repairs.Repair(u)
	if ok {
		return nil
	}
	k := keyOf(u)
	writer := "unknown"
	if a.live != nil {
		if now, err := a.read(ctx, a.live, k); err == nil && now != nil {
			writer = lastWriter(now.managedFields, plugins.FieldManagerFor(a.kind), u)
		}
	}
	return &contestedError{retryAfter: hold.Left, err: fmt.Errorf(
		"%s %s/%s: %q undid plugin %s's last %d repairs, so another controller writes it too; left as it is for %s, then put back (the wait doubles while this goes on). "+
			"Stop the other controller (moving over: see examples/host/docs/moveover.md)",
		k.gvk.Kind, k.namespace, k.name, writer, a.kind, hold.Repairs, hold.For)}
}

// contestedError is an object a RepairGate held back.
type contestedError struct {
	retryAfter time.Duration
	err        error
}

func (e *contestedError) Error() string { return e.err.Error() }

func (e *contestedError) Unwrap() error { return e.err }

// Reason is the reason of the plugin's condition (see plugins.ReasonOf).
func (e *contestedError) Reason() string { return plugins.ReasonContested }

// RetryAfter is when the hold ends.
func (e *contestedError) RetryAfter() time.Duration { return e.retryAfter }

// lastWriter returns the field manager that undid our repair: of the
// managers other than ours, the last to write among those that hold a
// field desired sets and our entry lacks (the fields it took from us),
// else the last to write at all; "unknown" for none. Managed fields keep
// times to the second, so the time alone cannot tell a writer from one
// that wrote the same second.
func lastWriter(entries []metav1.ManagedFieldsEntry, ours string, desired *unstructured.Unstructured) string {
	own, _ := ownFields(entries, ours)
	writer, best, took := "unknown", time.Time{}, false
	for _, e := range entries {
		if e.Manager == ours || e.Subresource != "" {
			continue
		}
		at, holds := timeOf(e), tookFrom(fieldsOf(e), own, desired)
		if writer == "unknown" || (holds && !took) || (holds == took && !at.Before(best)) {
			writer, best, took = e.Manager, at, holds
		}
	}
	return writer
}

// tookFrom reports whether set holds a field desired sets that own, our
// entry, does not.
func tookFrom(set, own map[string]any, desired *unstructured.Unstructured) bool {
	found := false
	walkDesired(desired.Object, func(path []string) {
		if !found && reachable(set, path) && (own == nil || !reachable(own, path)) {
			found = true
		}
	})
	return found
}

func timeOf(e metav1.ManagedFieldsEntry) time.Time {
	if e.Time == nil {
		return time.Time{}
	}
	return e.Time.Time
}
