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
	// planned is true for a mutant that changes what the plugin sees only
	// in some plans (a guard's read differs from the API server's in a
	// stale view, a claim is held elsewhere only when a rival asks): its
	// reach is known only once every pattern ran.
	planned bool
}

// mutation is what a mutant is given for one pass: the plugin, the
// client the pass reads from (the host's cache), the API server, and hit,
// which it calls when it changed what the plugin asked for: when the
// mutant was reached and gave the plugin another answer, or made another
// call, than the plugin's own code would have (a guard that read the same
// from the cache as from the API server, or a sweep with nothing to sweep,
// is not hit).
type mutation struct {
	def   plugins.Definition
	cache client.Client
	live  client.Reader
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
			stale := staleRead{cache: m.cache, live: m.live, hit: m.hit}
			req.Live = stale
			objects := apply.New(m.cache, m.def.Kind(), req.Profile, m.def.Owns, append(apply.OptionsFor(m.def), apply.WithLiveReader(stale))...)
			req.Objects = staleGuard{Objects: objects, cache: stale}
		}, planned: true}
	// DropClaim: the guard that reads whether another Profile holds a
	// piece (Claim, HeldElsewhere) finds no one.
	DropClaim = Mutant{Name: "drop-claim", Does: "Claim and HeldElsewhere never find another holder",
		mutate: func(req *plugins.Request, m mutation) { req.Outside = dropClaim{Outside: req.Outside, hit: m.hit} }, planned: true}
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
	called, err := r.Outside.Ensure(ctx, system, key, desired, fn)
	if called {
		r.hit()
	}
	return called, err
}

type skipSweep struct {
	plugins.Outside
	hit func()
}

// Sweep is hit when the record holds a key the sweep would have taken.
func (s skipSweep) Sweep(ctx context.Context, piece func(string) (string, bool), _ func(context.Context, string, []string) error) error {
	keys, err := s.Recorded(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, ok := piece(k); ok {
			s.hit()
			break
		}
	}
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
	cache staleRead
}

func (s staleGuard) Annotate(ctx context.Context, _ client.Reader, obj plugins.Foreign, want map[string]string) (plugins.Change, error) {
	return s.Objects.Annotate(ctx, s.cache, obj, want)
}

func (s staleGuard) Unannotate(ctx context.Context, _ client.Reader, obj plugins.Foreign, keys ...string) (plugins.Change, error) {
	return s.Objects.Unannotate(ctx, s.cache, obj, keys...)
}

func (s staleGuard) Mark(ctx context.Context, _ client.Reader, obj plugins.Foreign, want plugins.Marks) (plugins.Change, error) {
	return s.Objects.Mark(ctx, s.cache, obj, want)
}

func (s staleGuard) Unmark(ctx context.Context, _ client.Reader, obj plugins.Foreign) (plugins.Change, error) {
	return s.Objects.Unmark(ctx, s.cache, obj)
}

type dropClaim struct {
	plugins.Outside
	hit func()
}

func (d dropClaim) Claim(ctx context.Context, piece string) (string, error) {
	holder, err := d.Outside.Claim(ctx, piece)
	if holder != "" {
		d.hit()
	}
	return "", err
}

func (d dropClaim) HeldElsewhere(ctx context.Context, match func(string) bool) (string, error) {
	holder, err := d.Outside.HeldElsewhere(ctx, match)
	if holder != "" {
		d.hit()
	}
	return "", err
}

// mutantRun is one mutant under way: whether it changed anything yet.
type mutantRun struct {
	Mutant
	reached atomic.Bool
}

// apply mutates the request of one pass, which reads from cache; live
// reads from the API server.
func (m *mutantRun) apply(req *plugins.Request, def plugins.Definition, cache client.Client, live client.Reader) {
	m.mutate(req, mutation{def: def, cache: cache, live: live, hit: func() { m.reached.Store(true) }})
}
