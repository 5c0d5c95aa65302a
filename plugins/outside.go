package plugins

import "context"

// Outside records what a plugin made true in systems outside the cluster
// (a database, a cloud, another namespace), so that a pass with nothing
// changed calls none of them, and so that Revoke knows what to undo: the
// request's Outside. Hosts give a plugin the one of package plugins/outside,
// which keeps the record in a ConfigMap in the host's namespace, out of the
// tenant's reach, and write it after each pass.
//
// A failed call is an error that names the system (its reason is
// <System>Error) and is retried; nothing is recorded for it.
type Outside interface {
	// Offline reports whether the host renders offline: every call is
	// skipped and reported, nothing is recorded.
	Offline() bool
	// Ensure calls fn when desired, under key, differs from what the
	// record holds (or the host's reverify period has passed), and records
	// desired when fn succeeds. It reports whether fn was called.
	Ensure(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error)
	// EnsureAhead is Ensure for a grant: the key is recorded as intended,
	// and written, before fn runs, so that a crash after the call still
	// leaves it for Revoke.
	EnsureAhead(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error)
	// Intend records keys as intended, written at once, before the calls
	// that make them.
	Intend(ctx context.Context, keys ...string) error
	// Call calls fn, bounded and counted, and records nothing.
	Call(ctx context.Context, system string, fn func(context.Context) error) error
	// Forget drops keys from the record once what they named is undone.
	Forget(ctx context.Context, keys ...string) error
	// Recorded returns every key of the record, made or intended.
	Recorded(ctx context.Context) ([]string, error)
	// Made returns the keys recorded as made.
	Made(ctx context.Context) ([]string, error)
	// Claim makes piece, an outside identity that may serve one Profile
	// only, this Profile's; it returns the Profile that holds it already,
	// or "".
	Claim(ctx context.Context, piece string) (string, error)
	// HeldElsewhere returns a Profile whose record holds a key that match
	// accepts, or "".
	HeldElsewhere(ctx context.Context, match func(key string) bool) (string, error)
	// Predecessors returns the UIDs of the earlier Profiles of the
	// Profile's name that its owner held (the host keeps a name for its
	// owner): outside state whose proof names one of them is the
	// Profile's.
	Predecessors(ctx context.Context) ([]string, error)
	// Sweep calls remove for each piece that recorded keys name, grouped by
	// piece, and forgets the keys of those removed.
	Sweep(ctx context.Context, piece func(key string) (string, bool), remove func(ctx context.Context, piece string, keys []string) error) error
	// ReportDangling records grants to the Profile's namespace that
	// outlived it and that the plugin did not make, for an operator.
	ReportDangling(ctx context.Context, grants []string) error
	// CheckDangling fails while such a report is unresolved.
	CheckDangling(ctx context.Context) error
}
