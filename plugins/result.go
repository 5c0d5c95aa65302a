package plugins

import (
	"fmt"
	"strings"
	"time"
)

// Action is what happened to one object.
type Action string

// The actions a plugin reports.
const (
	// Created means the object did not exist and was created.
	Created Action = "created"
	// Configured means the object existed and was changed.
	Configured Action = "configured"
	// Unchanged means the object already held what we own; no request was sent.
	Unchanged Action = "unchanged"
	// Deleted means the object was ours, no longer wanted, and was deleted.
	Deleted Action = "deleted"
	// Skipped means an object of that name exists but is not ours, so it was left alone.
	Skipped Action = "skipped"
)

// Change is one object and what was done to it. Outside state (a database, a
// blob container) is reported with its own Kind, such as "PostgresRole".
type Change struct {
	// Kind is the object's kind, or the outside state's.
	Kind string
	// Namespace is empty for cluster-scoped objects and outside state.
	Namespace string
	Name      string
	// Action is what was done.
	Action Action
}

// String renders the change as "created ResourceQuota ns/name".
func (c Change) String() string {
	if c.Namespace == "" {
		return fmt.Sprintf("%s %s %s", c.Action, c.Kind, c.Name)
	}
	return fmt.Sprintf("%s %s %s/%s", c.Action, c.Kind, c.Namespace, c.Name)
}

// Result is the change set of one Apply or Revoke.
type Result struct {
	// Changes are in the order they were made.
	Changes []Change
	// Waiting, when not empty, says what the pass waits for (another
	// controller's work, such as Argo CD removing what it deployed). The
	// pass is not done, and is not failing either: hosts show Waiting on
	// the plugin's condition (status Unknown, reason Waiting), record no
	// Warning Event, keep a Revoke's finalizer, and look again after
	// RequeueAfter. Set both with Wait.
	Waiting string
	// RequeueAfter is when to look again while Waiting.
	RequeueAfter time.Duration
}

// DefaultWait is how long a pass that waits and names no duration waits.
const DefaultWait = 5 * time.Second

// Wait marks the pass as waiting for what (worded to complete "waiting
// for"), to be looked at again after d (DefaultWait when d is not
// positive).
func (r *Result) Wait(d time.Duration, what string) {
	if d <= 0 {
		d = DefaultWait
	}
	r.Waiting, r.RequeueAfter = what, d
}

// Add appends a change.
func (r *Result) Add(c Change) { r.Changes = append(r.Changes, c) }

// Merge appends the changes of other, and takes its wait when r has none.
func (r *Result) Merge(other Result) {
	r.Changes = append(r.Changes, other.Changes...)
	if r.Waiting == "" && other.Waiting != "" {
		r.Waiting, r.RequeueAfter = other.Waiting, other.RequeueAfter
	}
}

// Count returns how many changes have action a.
func (r Result) Count(a Action) int {
	n := 0
	for _, c := range r.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Summary counts the changes by action in a fixed order, for example
// "1 created, 2 unchanged". It is "no objects" for an empty result.
func (r Result) Summary() string {
	var parts []string
	for _, a := range []Action{Created, Configured, Unchanged, Deleted, Skipped} {
		if n := r.Count(a); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	if len(parts) == 0 {
		return "no objects"
	}
	return strings.Join(parts, ", ")
}
