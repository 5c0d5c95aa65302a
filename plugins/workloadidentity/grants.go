package workloadidentity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	iam "google.golang.org/api/iam/v1"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// The outside-state keys of the plugin's record. An IAM policy has no room
// for a proof of who added a member, so the record, a labelled object of the
// plugin's in the Profile's namespace, is the proof: one key per member the
// plugin added, one per member someone else had granted first.
const (
	// grantPrefix starts grant/<gsa>/<member>: the plugin added the member,
	// and removes it on Revoke.
	grantPrefix = "grant/"
	// foreignPrefix starts foreign/<gsa>/<member>: the member held the role
	// before the plugin's first grant; it is never removed.
	foreignPrefix = "foreign/"
	// legacyPrefix starts gsa/<gsa>, the key of versions before per-member
	// keys, which granted every member of the Profile on gsa.
	legacyPrefix = "gsa/"
)

func grantKey(gsa, member string) string   { return grantPrefix + gsa + "/" + member }
func foreignKey(gsa, member string) string { return foreignPrefix + gsa + "/" + member }

// parseKey splits a key of the record into its prefix, account and member
// (empty for a legacy key).
func parseKey(k string) (prefix, gsa, member string, ok bool) {
	for _, prefix := range []string{grantPrefix, foreignPrefix, legacyPrefix} {
		rest, found := strings.CutPrefix(k, prefix)
		if !found {
			continue
		}
		gsa, member, _ = strings.Cut(rest, "/")
		return prefix, gsa, member, gsa != "" && (member != "") == (prefix != legacyPrefix)
	}
	return "", "", "", false
}

// errForeignGone is a member someone else had granted that no longer holds
// the role: the record forgets it, and the next pass grants it as ours.
var errForeignGone = errors.New("a member granted by someone else before the plugin no longer holds the role; the plugin grants it on the next pass")

// grantMembers makes each member hold the role on gsa (only when that is not what
// was last made true). A member that already holds it, unrecorded, was
// granted by someone else: it is recorded as foreign and never removed. It
// returns the keys of the record that stay. An account another Profile's
// record holds a grant on is a Conflict, unless shared.
func (p Plugin) grantMembers(ctx context.Context, req plugins.Request, gsa string, members []string, shared bool) ([]string, plugins.Change, error) {
	change := plugins.Change{Kind: "GCPServiceAccountIAMPolicy", Name: gsa, Action: plugins.Unchanged}
	recorded, err := req.Outside.Recorded(ctx)
	if err != nil {
		return nil, change, err
	}
	// Only what the host made proves a member foreign or a legacy grant: a
	// key moved from a record the tenant could write proves nothing.
	made, err := req.Outside.Made(ctx)
	if err != nil {
		return nil, change, err
	}
	// The versions before per-member keys added every member they granted.
	legacy := slices.Contains(made, legacyPrefix+gsa)
	keep := []string{legacyPrefix + gsa}
	var errs []error
	for _, m := range members {
		want := struct{ ServiceAccount, Role, Member string }{gsa, RoleWorkloadIdentityUser, m}
		gk, fk := grantKey(gsa, m), foreignKey(gsa, m)
		keep = append(keep, gk, fk)
		if slices.Contains(made, fk) {
			_, err := req.Outside.Ensure(ctx, System, fk, want, func(ctx context.Context) error { return p.stillGranted(ctx, gsa, m) })
			if errors.Is(err, errForeignGone) {
				err = errors.Join(err, req.Outside.Forget(ctx, fk))
			}
			errs = append(errs, err)
			continue
		}
		held := func(holder string) error {
			return plugins.Terminalf(plugins.ReasonConflict,
				"gcpServiceAccount %q already serves Profile %s; an account serves one Profile unless the host's allowance marks it shared", gsa, holder)
		}
		if !shared {
			if err := serviceaccounts.HeldOffline(ctx, req, grantPrefix+gsa, held); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		present := false
		called, err := req.Outside.Ensure(ctx, System, gk, want, func(ctx context.Context) error {
			if !shared {
				holder, err := req.Outside.Claim(ctx, grantPrefix+gsa)
				if err != nil {
					return err
				}
				if holder != "" {
					return held(holder)
				}
			}
			var intendErr error
			changed, err := p.update(ctx, gsa, func(pol *iam.Policy) bool {
				present = HasMembers(pol, RoleWorkloadIdentityUser, []string{m})
				if present {
					return false
				}
				// Recorded before it is granted, once the policy shows it
				// is not someone else's: a grant made by a pass that stops
				// before the end is then still ours to revoke.
				if intendErr = req.Outside.Intend(ctx, gk); intendErr != nil {
					return false
				}
				return Grant(pol, RoleWorkloadIdentityUser, []string{m})
			})
			if changed {
				change.Action = plugins.Configured
			}
			return errors.Join(intendErr, err)
		})
		if err != nil || !called || !present || legacy || slices.Contains(recorded, gk) {
			errs = append(errs, err)
			continue
		}
		// Someone else granted it before us: not ours to remove.
		errs = append(errs, req.Outside.Forget(ctx, gk))
		_, err = req.Outside.Ensure(ctx, System, fk, want, func(ctx context.Context) error { return p.stillGranted(ctx, gsa, m) })
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil || !legacy {
		return keep, change, err
	}
	return keep, change, req.Outside.Forget(ctx, legacyPrefix+gsa)
}

// stillGranted reads the policy of gsa and returns errForeignGone unless
// member holds the role.
func (p Plugin) stillGranted(ctx context.Context, gsa, member string) error {
	project, err := Project(gsa)
	if err != nil {
		return plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	pol, err := p.iam.Policy(ctx, Resource(project, gsa))
	if err != nil {
		return fmt.Errorf("read IAM policy of %s: %w", gsa, err)
	}
	if !HasMembers(pol, RoleWorkloadIdentityUser, []string{member}) {
		return fmt.Errorf("member %s of %s: %w", member, gsa, errForeignGone)
	}
	return nil
}

// revokeAll removes, from each Google service account, the members the
// record says the plugin added for this Profile, except the keys in keep,
// and forgets them: one policy write per account. Keys that name no member
// of this Profile are forgotten only. Keys of members recorded as foreign
// stay, on every account (the record goes with the Profile): a later pass
// that fails closed on the accounts the allowances name must still know
// that those members are someone else's, or it would take them.
func (p Plugin) revokeAll(ctx context.Context, req plugins.Request, cfg *Config, keep []string) (plugins.Result, error) {
	var res plugins.Result
	ns := plugins.Namespace(req.Profile)
	// ours returns the account of a key the sweep handles and the members
	// the key says the plugin added there for this Profile: none for one
	// that cannot be ours.
	ours := func(k string) (gsa string, members []string, ok bool) {
		prefix, gsa, member, ok := parseKey(k)
		if !ok || prefix == foreignPrefix || slices.Contains(keep, k) {
			return "", nil, false
		}
		switch {
		case prefix == legacyPrefix:
			// An account we could not have granted has nothing to undo.
			members, _ = cfg.members(req.Profile, gsa)
		case prefix == grantPrefix && inNamespace(member, ns):
			// Only a member of this Profile's namespace can be ours.
			members = []string{member}
		}
		return gsa, members, true
	}
	err := req.Outside.Sweep(ctx, func(k string) (string, bool) {
		gsa, members, ok := ours(k)
		if len(members) == 0 {
			// Nothing to remove: the key is forgotten on its own, with no call.
			return k, ok
		}
		return gsa, ok
	}, func(ctx context.Context, gsa string, keys []string) error {
		var members []string
		for _, k := range keys {
			_, m, _ := ours(k)
			members = append(members, m...)
		}
		return p.removeMembers(ctx, req, gsa, members, &res)
	})
	return res, err
}

// removeMembers takes members off the role on gsa in one policy write, and
// adds the change to res. An account the plugin could not have granted
// (a terminal error) has nothing to undo.
func (p Plugin) removeMembers(ctx context.Context, req plugins.Request, gsa string, members []string, res *plugins.Result) error {
	if len(members) == 0 {
		return nil
	}
	changed := false
	err := req.Outside.Call(ctx, System, func(ctx context.Context) error {
		var err error
		changed, err = p.update(ctx, gsa, func(pol *iam.Policy) bool { return Revoke(pol, RoleWorkloadIdentityUser, members) })
		return err
	})
	if plugins.IsTerminal(err) || errors.Is(err, ErrNoAccount) {
		// No account of that name (or none we could have granted): no
		// member of ours on it.
		return nil
	}
	if err == nil && changed {
		res.Add(plugins.Change{Kind: "GCPServiceAccountIAMPolicy", Name: gsa, Action: plugins.Deleted})
	}
	return err
}

// inNamespace reports whether member is a Kubernetes service account of
// namespace: serviceAccount:<pool>[<namespace>/<name>].
func inNamespace(member, namespace string) bool {
	_, rest, ok := strings.Cut(member, "[")
	return ok && strings.HasPrefix(rest, namespace+"/") && strings.HasSuffix(rest, "]")
}
