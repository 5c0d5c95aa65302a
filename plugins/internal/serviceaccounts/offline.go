package serviceaccounts

import (
	"context"
	"fmt"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/identities"
)

// offline is what an Outside that calls nothing offers (outside.NewOffline).
type offline interface {
	Offline() bool
	NotChecked(what string)
}

// isOffline returns the request's Outside when it calls nothing.
func isOffline(req plugins.Request) (offline, bool) {
	o, ok := req.Outside.(offline)
	return o, ok && o.Offline()
}

// HeldOffline returns, in an offline pass (rendering, the admission
// webhook), the Conflict conflict makes of the Profile that holds piece,
// when another one does; the claim is read, never written. Online it
// returns nil: the pass claims the piece in its outside call, before the
// call that grants it.
func HeldOffline(ctx context.Context, req plugins.Request, piece string, conflict func(holder string) error) error {
	if _, ok := isOffline(req); !ok {
		return nil
	}
	holder, err := req.Outside.Claim(ctx, piece)
	if err != nil || holder == "" {
		return err
	}
	return conflict(holder)
}

// tagNotChecked says, in an offline pass, that the tag allowance asks of
// identity is read from the cloud, so that nothing offline can check it.
func tagNotChecked(req plugins.Request, allowance identities.Allowance, identity string) {
	o, ok := isOffline(req)
	if !ok || !allowance.NeedsTag() {
		return
	}
	o.NotChecked(fmt.Sprintf("identity %q: the tag %s that the host's allowance asks of it is read from the cloud when the host grants the identity; not checked here",
		identity, allowance.Tag.Key))
}
