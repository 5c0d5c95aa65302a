package plugins

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// Builder is a plugin that only builds objects from the Profile and its
// config C: Apply writes what Build returns and prunes the rest of ours,
// and Revoke deletes everything of ours. An error from Build writes
// nothing, so a Profile with bad input keeps what it has, unless Build
// wraps it with AfterWrite: then its objects are written and the error is
// reported after. Most plugins that write only Kubernetes objects are one;
// BuilderDefinition makes its Definition.
type Builder[C any] struct {
	// KindName is what Kind returns.
	KindName string
	// Build returns the Profile's objects under cfg.
	Build func(cfg *C, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error)
}

var _ Plugin = Builder[struct{}]{}

// Kind returns b.KindName.
func (b Builder[C]) Kind() string { return b.KindName }

// Apply writes the objects Build returns for the Profile, and deletes ours
// that it no longer returns.
func (b Builder[C]) Apply(ctx context.Context, req Request) (Result, error) {
	cfg, err := ConfigOf[C](req)
	if err != nil {
		return Result{}, err
	}
	objs, err := b.Build(cfg, req.Profile)
	var after *afterWrite
	if err != nil && !errors.As(err, &after) {
		return Result{}, err
	}
	res, serr := req.Objects.Sync(ctx, objs...)
	return res, errors.Join(serr, err)
}

// AfterWrite marks err, a problem a Builder's Build found, as one that
// leaves the objects Build returned still to be written: a gate label that
// does not parse, say, which turns its objects off. Apply writes them,
// prunes the rest of ours and then returns err, so that the condition
// names the problem while the Profile gets what its valid input asks for.
// A nil err stays nil.
func AfterWrite(err error) error {
	if err == nil {
		return nil
	}
	return &afterWrite{err}
}

type afterWrite struct{ err error }

func (a *afterWrite) Error() string { return a.err.Error() }
func (a *afterWrite) Unwrap() error { return a.err }

// Revoke deletes every object of ours for the Profile.
func (b Builder[C]) Revoke(ctx context.Context, req Request) (Result, error) {
	return req.Objects.DeleteAll(ctx)
}

// BuilderDefinition returns the Definition of a Builder of kind whose
// config newConfig makes (with the built-in defaults) and whose objects,
// of the kinds owns, build gives. Set further fields of the Definition on
// what it returns.
func BuilderDefinition[C any](kind string, newConfig func() *C, build func(cfg *C, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error), owns ...schema.GroupVersionKind) Definition {
	return Definition{
		Plugin:    Builder[C]{KindName: kind, Build: build},
		NewConfig: func() any { return newConfig() },
		Owns:      owns,
	}
}
