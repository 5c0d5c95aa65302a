package gitea

import (
	"context"

	"github.com/profilekit/profilekit/plugins"
)

// outside is the part of the shared outside-state record the plugin uses.
type outside interface {
	Ensure(ctx context.Context, system, key string, desired any, fn func(context.Context) error) (bool, error)
	Call(ctx context.Context, system string, fn func(context.Context) error) error
	Forget(ctx context.Context, keys ...string) error
	Offline() bool
}

func outsideOf(req plugins.Request) outside {
	return direct{offline: req.Objects != nil && req.Objects.Recorded() != nil}
}

// direct calls every time.
type direct struct{ offline bool }

func (d direct) Ensure(ctx context.Context, _, _ string, _ any, fn func(context.Context) error) (bool, error) {
	if d.offline {
		return false, nil
	}
	return true, fn(ctx)
}

func (d direct) Call(ctx context.Context, _ string, fn func(context.Context) error) error {
	if d.offline {
		return nil
	}
	return fn(ctx)
}

func (direct) Forget(context.Context, ...string) error { return nil }
func (d direct) Offline() bool                         { return d.offline }
