package plugintest

// This file holds the contract-level mutants: bugs made at the boundary
// between a plugin and its host (req.Objects, req.Outside, the request's
// live reader), without editing the plugin, so that the harness's own
// power can be measured: a mutant that survives every plan is a bug the
// harness would not notice.

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Mutant is one bug made at the contract boundary: a change of what a
// plugin's calls on req.Objects and req.Outside do.
type Mutant struct {
	// Name names the mutant, in MutantEnv and in the report.
	Name string
	// Does says what it changes.
	Does   string
	mutate func(req *plugins.Request, m mutation)
}

// mutation is what a mutant is given for one pass: the plugin, the
// client the pass reads from (the host's cache), and hit, which it calls
// when it changed what the plugin asked for.
type mutation struct {
	def   plugins.Definition
	cache client.Client
	hit   func()
}

// The contract-level mutants.
var (
	// PruneThenWrite: a Sync or a Mark that changes anything deletes every
	// object of the plugin's (gives up every key) first, then writes the
	// wanted ones again.
	PruneThenWrite = Mutant{Name: "prune-then-write", Does: "a Sync or Mark that changes anything prunes everything, then writes again",
		mutate: func(req *plugins.Request, m mutation) { req.Objects = pruneThenWrite{Objects: req.Objects, hit: m.hit} }}
	// RecordAfter: EnsureAhead records its key only after the call, as
	// Ensure does.
	RecordAfter = Mutant{Name: "record-after", Does: "EnsureAhead behaves as Ensure: the record is written after the call",
		mutate: func(req *plugins.Request, m mutation) { req.Outside = recordAfter{Outside: req.Outside, hit: m.hit} }}
	// SkipSweep: Sweep removes nothing and reports success.
	SkipSweep = Mutant{Name: "skip-sweep", Does: "Outside.Sweep does nothing",
		mutate: func(req *plugins.Request, m mutation) { req.Outside = skipSweep{Outside: req.Outside, hit: m.hit} }}
	// CallTwice: every outside call is made twice.
	CallTwice = Mutant{Name: "call-twice", Does: "every outside call (Ensure, EnsureAhead, Call) is made twice",
		mutate: func(req *plugins.Request, m mutation) { req.Outside = callTwice{Outside: req.Outside, hit: m.hit} }}
	// StaleGuard: the guards read the host's cache instead of the API
	// server (the request's Live, the Applier's live reader, the reader
	// given to Mark and Annotate).
	StaleGuard = Mutant{Name: "stale-guard", Does: "the guards' reads go to the cache, not to the API server",
		mutate: func(req *plugins.Request, m mutation) {
			m.hit()
			req.Live = m.cache
			req.Objects = staleGuard{Objects: apply.New(m.cache, m.def.Kind(), req.Profile, m.def.Owns, apply.OptionsFor(m.def)...), cache: m.cache, hit: m.hit}
		}}
	// DropClaim: the guard that reads whether another Profile holds a
	// piece (Claim, HeldElsewhere) finds no one.
	DropClaim = Mutant{Name: "drop-claim", Does: "Claim and HeldElsewhere never find another holder",
		mutate: func(req *plugins.Request, m mutation) { req.Outside = dropClaim{Outside: req.Outside, hit: m.hit} }}
)

// Mutants returns every contract-level mutant.
func Mutants() []Mutant {
	return []Mutant{PruneThenWrite, RecordAfter, SkipSweep, CallTwice, StaleGuard, DropClaim}
}

// changed reports whether a result holds a write.
func changed(res plugins.Result) bool {
	for _, c := range res.Changes {
		if c.Action == plugins.Created || c.Action == plugins.Configured || c.Action == plugins.Deleted {
			return true
		}
	}
	return false
}

type pruneThenWrite struct {
	plugins.Objects
	hit func()
}

func (p pruneThenWrite) Sync(ctx context.Context, desired ...runtime.ApplyConfiguration) (plugins.Result, error) {
	res, err := p.Objects.Sync(ctx, desired...)
	if err != nil || !changed(res) {
		return res, err
	}
	p.hit()
	if _, err := p.Objects.DeleteAll(ctx); err != nil {
		return res, err
	}
	return p.Objects.Sync(ctx, desired...)
}

func (p pruneThenWrite) Mark(ctx context.Context, live client.Reader, obj plugins.Foreign, want plugins.Marks) (plugins.Change, error) {
	c, err := p.Objects.Mark(ctx, live, obj, want)
	if err != nil || c.Action == plugins.Unchanged || c.Action == "" {
		return c, err
	}
	p.hit()
	if _, err := p.Objects.Unmark(ctx, live, obj); err != nil {
		return c, err
	}
	return p.Objects.Mark(ctx, live, obj, want)
}

type recordAfter struct {
	plugins.Outside
	hit func()
}

func (r recordAfter) EnsureAhead(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	r.hit()
	return r.Outside.Ensure(ctx, system, key, desired, fn)
}

type skipSweep struct {
	plugins.Outside
	hit func()
}

func (s skipSweep) Sweep(context.Context, func(string) (string, bool), func(context.Context, string, []string) error) error {
	s.hit()
	return nil
}

type callTwice struct {
	plugins.Outside
	hit func()
}

// twice is fn made twice, the second time once the first succeeded.
func (c callTwice) twice(fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		c.hit()
		if err := fn(ctx); err != nil {
			return err
		}
		return fn(ctx)
	}
}

func (c callTwice) Ensure(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	return c.Outside.Ensure(ctx, system, key, desired, c.twice(fn))
}

func (c callTwice) EnsureAhead(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error) {
	return c.Outside.EnsureAhead(ctx, system, key, desired, c.twice(fn))
}

func (c callTwice) Call(ctx context.Context, system string, fn func(context.Context) error) error {
	return c.Outside.Call(ctx, system, c.twice(fn))
}

type staleGuard struct {
	plugins.Objects
	cache client.Client
	hit   func()
}

func (s staleGuard) Annotate(ctx context.Context, _ client.Reader, obj plugins.Foreign, want map[string]string) (plugins.Change, error) {
	s.hit()
	return s.Objects.Annotate(ctx, s.cache, obj, want)
}

func (s staleGuard) Unannotate(ctx context.Context, _ client.Reader, obj plugins.Foreign, keys ...string) (plugins.Change, error) {
	s.hit()
	return s.Objects.Unannotate(ctx, s.cache, obj, keys...)
}

func (s staleGuard) Mark(ctx context.Context, _ client.Reader, obj plugins.Foreign, want plugins.Marks) (plugins.Change, error) {
	s.hit()
	return s.Objects.Mark(ctx, s.cache, obj, want)
}

func (s staleGuard) Unmark(ctx context.Context, _ client.Reader, obj plugins.Foreign) (plugins.Change, error) {
	s.hit()
	return s.Objects.Unmark(ctx, s.cache, obj)
}

type dropClaim struct {
	plugins.Outside
	hit func()
}

func (d dropClaim) Claim(ctx context.Context, piece string) (string, error) {
	d.hit()
	_, err := d.Outside.Claim(ctx, piece)
	return "", err
}

func (d dropClaim) HeldElsewhere(context.Context, func(string) bool) (string, error) {
	d.hit()
	return "", nil
}

// mutantRun is one mutant under way: whether it changed anything yet.
type mutantRun struct {
	Mutant
	reached atomic.Bool
}

// apply mutates the request of one pass.
func (m *mutantRun) apply(req *plugins.Request, def plugins.Definition, cache client.Client) {
	m.mutate(req, mutation{def: def, cache: cache, hit: func() { m.reached.Store(true) }})
}
