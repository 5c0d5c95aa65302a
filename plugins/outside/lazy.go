package outside

import (
	"context"
	"sync"
)

// Lazy is a value built on first use, such as the SDK client of a cloud
// identity plugin, so that a host that never serves the plugin needs none of
// its configuration or credentials. A build that fails is not kept: the next
// Get builds again, so that credentials that appear later are picked up.
// Lazy is safe for concurrent use; its zero value is not, use NewLazy.
type Lazy[T any] struct {
	build func(context.Context) (T, error)

	mu    sync.Mutex
	built bool
	v     T
}

// NewLazy returns a Lazy that builds its value with build. build gets the
// context of the Get that calls it; a value that outlives that call (a
// client that holds the context) must not keep it.
func NewLazy[T any](build func(context.Context) (T, error)) *Lazy[T] {
	return &Lazy[T]{build: build}
}

// Get returns the value, built by the first Get that succeeds. Concurrent
// callers wait for one build rather than each making their own.
func (l *Lazy[T]) Get(ctx context.Context) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built {
		return l.v, nil
	}
	v, err := l.build(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	l.v, l.built = v, true
	return v, nil
}
