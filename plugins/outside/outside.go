package outside

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Outside remembers, for one plugin and one Profile, what the plugin last made
// true in systems outside the cluster (Azure, PostgreSQL, cloud IAM), so that
// a pass with nothing changed makes no outside call at all.
//
// The record is a ConfigMap named by RecordName (the plugin and the
// Profile's UID) in the host's namespace (Options.Namespace), out of
// every tenant's reach: safety decisions read it, so no tenant may write it.
// It is labelled as the plugin's and owned by the Profile. Ensure and Forget
// change it in memory; Flush, which hosts call after every Apply and
// Revoke, writes it once. Outside is safe for concurrent use by one
// plugin's pass.
type Outside struct {
	kind    string
	profile *kubeflowv1.Profile
	reader  client.Reader
	live    client.Reader
	writer  client.Writer
	records *Records
	opts    Options
	now     func() time.Time
	offline bool
	// claims reads, offline, the claims and records of other Profiles
	// (WithClaimsFrom).
	claims client.Reader

	mu      sync.Mutex
	loaded  bool
	fresh   bool // loaded from the live reader, not the cache
	exists  bool
	uid     types.UID
	entries map[string]outsideEntry
	dirty   bool
	forgot  bool // keys were forgotten: Flush lets their claims go
	skipped []string
	// unchecked are what an offline pass could not check (NotChecked).
	unchecked []string
	// dangled are the grants ReportDangling reported in this pass.
	dangled []string
	// gate, when set, stands before and after every call (WithCallGate).
	gate CallGate
}

type outsideEntry struct {
	Hash    string    `json:"hash"`
	At      time.Time `json:"at"`
	Trigger string    `json:"trigger,omitempty"`
}

// Option configures an Outside.
type Option func(*Outside)

// WithLiveReader sets an uncached reader that confirms the record
// before an outside call, so that a cache that has not yet seen our last
// write does not cause a repeated call.
func WithLiveReader(r client.Reader) Option {
	return func(o *Outside) { o.live = r }
}

// WithRecords lets the Outside know the record versions that the
// host's earlier passes wrote and its cache may not show yet (see
// Records). It takes effect with WithLiveReader.
func WithRecords(r *Records) Option {
	return func(o *Outside) { o.records = r }
}

// WithClock replaces time.Now, for tests of re-verification.
func WithClock(now func() time.Time) Option {
	return func(o *Outside) { o.now = now }
}

// New returns the outside-state record of plugin kind for Profile p,
// read through c (usually a cache) and written through c.
func New(c plugins.Cluster, kind string, p *kubeflowv1.Profile, opts Options, options ...Option) *Outside {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	o := &Outside{kind: kind, profile: p, reader: c, writer: c, opts: opts, now: time.Now}
	for _, opt := range options {
		opt(o)
	}
	return o
}

// NewOffline returns an Outside that calls nothing and writes nothing:
// Ensure and Call remember what they skipped. Offline rendering uses it;
// with WithClaimsFrom, Claim reads who holds a piece (see offline.go).
func NewOffline(kind string, p *kubeflowv1.Profile, options ...Option) *Outside {
	o := &Outside{kind: kind, profile: p, offline: true, now: time.Now, loaded: true, entries: map[string]outsideEntry{}}
	for _, opt := range options {
		opt(o)
	}
	return o
}

// Offline reports whether outside calls are skipped.
func (o *Outside) Offline() bool { return o.offline }

// Skipped returns the calls an offline Outside skipped, as "<system> <key>".
func (o *Outside) Skipped() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.skipped)
}

// Ensure makes one piece of outside state true. key names the piece among the
// plugin's outside state for this Profile (such as "container/unclassified");
// desired is any JSON-encodable value that fully describes what must be true.
// When the record holds desired's hash, no re-verification is due and the
// Profile's AnnotationReverify has not changed, Ensure returns (false, nil)
// and calls nothing. Otherwise it calls fn with a timeout, counts the call,
// and records the hash when fn succeeds. A failure is an *Error that
// names system, unless fn returned a TerminalError.
func (o *Outside) Ensure(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	return o.ensure(ctx, system, key, desired, fn, false)
}

// EnsureAhead is Ensure for a piece whose removal Sweep must find even when
// the pass that made it never recorded it (the host stopped, or the record's
// write failed, between the outside call and Flush): a key the record does
// not hold yet is written to the record, as not made, before fn runs, and
// fn does not run when that write fails. A Profile that then stops naming
// the piece has it removed by the next Sweep, made or not, so the removal
// must tolerate a piece that was never made. Use it for grants of access,
// whose leftover would let a tenant keep what it no longer names. The key is
// in Recorded from the first write on, made or not: a plugin that takes
// the record as proof that it made something must not use EnsureAhead for
// that piece (Made leaves such keys out).
func (o *Outside) EnsureAhead(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	return o.ensure(ctx, system, key, desired, fn, true)
}

func (o *Outside) ensure(ctx context.Context, system, key string, desired any, fn func(context.Context) error, ahead bool) (bool, error) {
	hash, err := hashOf(desired)
	if err != nil {
		return false, fmt.Errorf("plugin %s: outside state %s: %w", o.kind, key, err)
	}
	if o.offline {
		o.skip(system, key)
		return false, nil
	}
	due, err := o.due(ctx, key, hash)
	if err != nil {
		return false, err
	}
	if !due {
		outsideUnchanged.WithLabelValues(o.kind, system).Inc()
		return false, nil
	}
	if ahead {
		if err := o.Intend(ctx, key); err != nil {
			return false, err
		}
	}
	if err := o.call(ctx, system, fn); err != nil {
		return true, err
	}
	o.mu.Lock()
	o.entries[key] = outsideEntry{Hash: hash, At: o.now().UTC().Truncate(time.Second), Trigger: o.trigger()}
	o.dirty = true
	o.mu.Unlock()
	return true, nil
}

// Intend writes keys to the record now, as not made, when the record does
// not hold them, in one write: EnsureAhead's first step, for a plugin that
// must decide within its call when the piece is about to be made (after a
// read that shows it is not there, say). Its error must stop the call. A
// key intended and never made is in Recorded, not in Made.
func (o *Outside) Intend(ctx context.Context, keys ...string) error {
	if o.offline {
		return nil
	}
	if err := o.load(ctx, false); err != nil {
		return err
	}
	o.mu.Lock()
	added := false
	for _, key := range keys {
		if _, held := o.entries[key]; !held {
			o.entries[key] = outsideEntry{}
			o.dirty, added = true, true
		}
	}
	o.mu.Unlock()
	if !added {
		return nil
	}
	if err := o.Flush(ctx); err != nil {
		return &recordError{err: err}
	}
	return nil
}

// recordError is a write of the outside-state record that failed within an
// outside call (Intend): the API server's failure, not the outside
// system's, so it is not reported as an Error.
type recordError struct{ err error }

func (e *recordError) Error() string { return e.err.Error() }
func (e *recordError) Unwrap() error { return e.err }

// Forget drops keys from the record, after their outside state was removed.
func (o *Outside) Forget(ctx context.Context, keys ...string) error {
	if o.offline {
		return nil
	}
	if err := o.load(ctx, false); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		if _, ok := o.entries[k]; ok {
			delete(o.entries, k)
			o.dirty, o.forgot = true, true
		}
	}
	return nil
}

// Recorded returns the keys the record holds, sorted: the outside state the
// plugin made true for this Profile, which Revoke removes.
func (o *Outside) Recorded(ctx context.Context) ([]string, error) {
	if err := o.load(ctx, true); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(maps.Keys(o.entries)), nil
}

// Made returns the keys the record holds as made true at least once,
// sorted: Recorded without the keys EnsureAhead wrote whose call has not
// succeeded yet. A plugin that takes the record as proof that it made a
// piece asks Made, not Recorded.
func (o *Outside) Made(ctx context.Context) ([]string, error) {
	if err := o.load(ctx, true); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []string
	for k, e := range o.entries {
		if e.Hash != "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Sweep removes the outside state that the plugin recorded for this Profile
// and that the Profile no longer names: the last step of Apply, for what it
// stopped naming, and of Revoke, for all of it.
//
// piece maps a recorded key to the piece of outside state it stands for (a
// role, a credential, a container), or reports false for a key the Profile
// still names or that is not the sweep's; keys of one piece are swept
// together. For each piece, in sorted order, Sweep calls remove with the
// piece and its keys, and forgets the keys once remove returns nil. So only
// what the record holds is ever removed, and a failed removal keeps its keys
// for the next pass to try again: an error is never taken for a removal.
// The errors of all pieces are joined.
func (o *Outside) Sweep(ctx context.Context, piece func(key string) (string, bool), remove func(ctx context.Context, piece string, keys []string) error) error {
	keys, err := o.Recorded(ctx)
	if err != nil {
		return err
	}
	pieces := map[string][]string{}
	for _, k := range keys {
		if p, ok := piece(k); ok {
			pieces[p] = append(pieces[p], k)
		}
	}
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(pieces)) {
		if err := remove(ctx, p, pieces[p]); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, o.Forget(ctx, pieces[p]...))
	}
	return errors.Join(errs...)
}

func (o *Outside) skip(system, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.skipped = append(o.skipped, strings.TrimSpace(system+" "+key))
}

// due reports whether key's outside state must be made true: the record does
// not hold hash, or re-verification is due, or the manual trigger changed.
func (o *Outside) due(ctx context.Context, key, hash string) (bool, error) {
	if err := o.load(ctx, false); err != nil {
		return false, err
	}
	if !o.stale(key, hash) {
		return false, nil
	}
	// The cache may not have seen our own last write yet: ask the API server
	// once before calling out.
	if err := o.load(ctx, true); err != nil {
		return false, err
	}
	return o.stale(key, hash), nil
}

func (o *Outside) stale(key, hash string) bool {
	o.mu.Lock()
	e, ok := o.entries[key]
	o.mu.Unlock()
	switch {
	case !ok || e.Hash != hash:
		return true
	case e.Trigger != o.trigger():
		return true
	case o.opts.Reverify > 0:
		return o.now().After(e.At.Add(o.period(key)))
	}
	return false
}

// period is the re-verification period of one piece, stretched by a
// fraction (up to 10%) that is stable per Profile and key.
func (o *Outside) period(key string) time.Duration {
	sum := sha256.Sum256([]byte(o.profile.Name + "/" + key))
	frac := float64(binary.BigEndian.Uint16(sum[:2])) / 65535
	return o.opts.Reverify + time.Duration(frac*0.1*float64(o.opts.Reverify))
}

func (o *Outside) trigger() string { return o.profile.Annotations[plugins.AnnotationReverify] }
