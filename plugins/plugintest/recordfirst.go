package plugintest

// This file holds "record before grant": an outside call that gives a
// grant must find the record that names it already written, so that a
// host that stops right after the call, and a Profile that then moves on,
// still leave the grant for Revoke to find.

import (
	"context"
	"slices"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// observed notes, for each outside call a pass makes, the record key it
// is made under ("" for Call, which records nothing).
type observed struct {
	plugins.Outside
	r *run
}

func (o observed) noting(key string, fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		o.r.noteCall(key)
		return fn(ctx)
	}
}

func (o observed) Ensure(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	return o.Outside.Ensure(ctx, system, key, desired, o.noting(key, fn))
}

func (o observed) EnsureAhead(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	return o.Outside.EnsureAhead(ctx, system, key, desired, o.noting(key, fn))
}

func (o observed) Call(ctx context.Context, system string, fn func(context.Context) error) error {
	return o.Outside.Call(ctx, system, o.noting("", fn))
}

// noteCall keeps the key of the outside call under way.
func (r *run) noteCall(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.callKey = key
}

// lastCall is the key of the last outside call made.
func (r *run) lastCall() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callKey
}

// recorded returns the keys of the Profile's outside-state record as the
// API server holds it now.
func (r *run) recorded(ctx context.Context) ([]string, error) {
	o := outside.New(r.h.Client, r.sc.Def.Kind(), r.profile, outside.Options{Namespace: r.h.recordsNamespace()}, outside.WithLiveReader(r.h.Client))
	return o.Recorded(ctx)
}

// checkCall runs after an outside call: a grant that appeared with it
// must be named by the record already, under the key the call was made
// for. A grant given by Call, which records nothing, is never named.
func (w *watcher) checkCall(ctx context.Context, before, now map[string]bool) []string {
	var given []string
	for g := range now {
		if !before[g] {
			given = append(given, g)
		}
	}
	if len(given) == 0 {
		return nil
	}
	slices.Sort(given)
	key := w.r.lastCall()
	if key == "" {
		return []string{"record before grant: " + given[0] + " was given by a call that records nothing (Call)"}
	}
	keys, err := w.r.recorded(ctx)
	if err != nil {
		return []string{"record: " + err.Error()}
	}
	if !slices.Contains(keys, key) {
		return []string{"record before grant: " + given[0] + " was given before the record named " + w.r.generic(key) + " (a host that stops now leaves it to no one)"}
	}
	return nil
}
