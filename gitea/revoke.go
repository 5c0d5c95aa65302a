package gitea

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
)

// Revoke removes the apps, routes, policies and ServiceEntries, and waits
// until Argo CD has removed what the Applications deployed. Databases,
// roles and their Secrets stay, unless retention is Delete: then the
// connections are terminated and database and role dropped first. A Profile
// being deleted loses its Secrets with its namespace, and the passwords
// the host kept for it with it (the garbage collector follows their owner
// reference).
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, o, err := begin(req)
	if err != nil {
		return plugins.Result{}, err
	}
	recorded, err := recordedSet(ctx, o, req.Retention)
	if err != nil {
		return plugins.Result{}, err
	}
	earlier, err := o.Predecessors(ctx)
	if err != nil {
		return plugins.Result{}, err
	}
	var res plugins.Result
	var keep []runtime.ApplyConfiguration
	var errs []error
	for _, in := range cfg.instances() {
		pw, err := heldPassword(ctx, req, in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		kept, err := p.letGo(ctx, req, o, in, in.target(req.Profile, earlier), pw, recorded[stateKey(in)], &res)
		if err != nil {
			errs = append(errs, err)
		}
		if kept != nil {
			keep = append(keep, kept)
		}
	}
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	var out plugins.Result
	if req.Profile.DeletionTimestamp.IsZero() {
		// Sync, not DeleteAll, even with nothing to write: it leaves what
		// letGo keeps in place (an earlier version's Secret, the only place
		// its password is).
		out, err = req.Objects.Sync(ctx, keep...)
	} else {
		out, err = req.Objects.DeleteAll(ctx)
	}
	res.Merge(out)
	if err != nil {
		return res, err
	}
	return res, apps.WaitGone(ctx, req.Client, Kind, req.Profile.Name, &res)
}

// recordedSet returns the outside state the record says Apply made true,
// which only retention Delete needs (to drop what lost its Secret).
func recordedSet(ctx context.Context, o plugins.Outside, ret plugins.Retention) (map[string]bool, error) {
	if o.Offline() || ret != plugins.RetentionDelete {
		return nil, nil
	}
	// Made, not Recorded: a key moved from a record the tenant could write
	// is no proof that Apply made anything.
	keys, err := o.Made(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out, nil
}
