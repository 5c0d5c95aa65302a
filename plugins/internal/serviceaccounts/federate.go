package serviceaccounts

import (
	"context"
	"errors"

	"github.com/profilekit/profilekit/plugins"
)

// Federate points the named service accounts of the Profile at a cloud
// identity in the one order that never leaves a pod with an identity it
// cannot use: grant makes the identity trust the service accounts; then the
// service accounts are annotated with want; only then does sweep take our
// grants off the identities the Profile named before, which no service
// account points at any more. A failed grant annotates nothing, and a failed
// annotation sweeps nothing.
func Federate(ctx context.Context, req plugins.Request, names []string, want map[string]string,
	grant func(context.Context) (plugins.Change, error), sweep func(context.Context) (plugins.Result, error)) (plugins.Result, error) {
	c, err := grant(ctx)
	if err != nil {
		return plugins.Result{Changes: []plugins.Change{c}}, err
	}
	res, err := Annotate(ctx, req, names, want)
	res.Add(c)
	if err != nil {
		return res, err
	}
	stale, err := sweep(ctx)
	res.Merge(stale)
	return res, err
}

// Defederate undoes Federate for a Profile that leaves the plugin: it gives
// up the plugin's annotation keys on the named service accounts, and sweep
// takes our grants off every identity the record holds. The two are
// independent: both run, and their errors are joined.
func Defederate(ctx context.Context, req plugins.Request, names []string, sweep func(context.Context) (plugins.Result, error), keys ...string) (plugins.Result, error) {
	res, annErr := Unannotate(ctx, req, names, keys...)
	removed, err := sweep(ctx)
	res.Merge(removed)
	return res, errors.Join(annErr, err)
}

// Refuse answers a pass refused the identity it names (refused, such as
// the host's policy's IdentityNotAllowed): what earlier passes granted,
// under a policy since narrowed, is taken back as Defederate takes it, and
// refused is returned with any error of that.
func Refuse(ctx context.Context, req plugins.Request, names []string, refused error, sweep func(context.Context) (plugins.Result, error), keys ...string) (plugins.Result, error) {
	res, err := Defederate(ctx, req, names, sweep, keys...)
	return res, errors.Join(refused, err)
}
