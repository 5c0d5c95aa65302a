package gitea

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Proof returns the comment the plugin writes on the role and the database
// it makes for an instance and Profile, and looks for before it alters,
// adopts or drops them. It holds the Profile's UID, so that a later Profile
// of the same name does not inherit what an earlier one left.
func Proof(instance string, p *kubeflowv1.Profile) string {
	return fmt.Sprintf("%s instance %s, for profile %s (uid %s)", proofPrefix, instance, p.Name, p.UID)
}

// proofPrefix starts every proof the plugin writes.
const proofPrefix = "profilekit: made by plugin " + Kind + ","

// proves reports whether comment proves a role or database the plugin's
// for spec's Profile: its proof, or one of its owner's earlier Profiles of
// the name.
func (spec DatabaseSpec) proves(comment string) bool {
	return comment == spec.Proof || slices.Contains(spec.Earlier, comment)
}

// someonesProof reports whether comment is a proof the plugin wrote for
// some Profile: when it is not this Profile's, it is an earlier Profile's
// of the same name (or another instance's). Adoption never takes such an
// object, and messages never quote it: its UID is another tenant's.
func someonesProof(comment string) bool { return strings.HasPrefix(comment, proofPrefix) }

// otherProof is what a message says of another Profile's proof.
const otherProof = "it carries profilekit's proof for another Profile, such as an earlier Profile of this name; an administrator who hands it to this Profile removes that comment first"

// RoleState is what PostgreSQL's catalog says of a role.
type RoleState struct {
	// Comment is the role's comment, "" when it has none.
	Comment string
	// Privileged names the rights the role holds that the plugin never
	// alters a role with: SUPERUSER, CREATEROLE, BYPASSRLS, REPLICATION.
	Privileged []string
	// CreateDB is whether the role may create databases itself.
	CreateDB bool
	// MemberOf is how many roles it is a member of.
	MemberOf int
}

// DatabaseState is what PostgreSQL's catalog says of a database.
type DatabaseState struct {
	// Owner is the owning role's name.
	Owner string
	// Comment is the database's comment, "" when it has none.
	Comment string
}

// Catalog is what a server holds under the names of one DatabaseSpec; a
// nil field is a missing object.
type Catalog struct {
	Role     *RoleState
	Database *DatabaseState
}

// ensurePlan is what Ensure writes, derived from the catalog alone.
type ensurePlan struct {
	// checkLogin asks Ensure to try the host's password on a role of the
	// plugin's, and to set it when it does not log in.
	checkLogin     bool
	createRole     bool
	alterPassword  bool
	markRole       bool
	createDatabase bool
	ownDatabase    bool
	markDatabase   bool
}

// adoptHint is what a Conflict over a role without any comment says: what
// the first release made looks like that, and only the host can take it.
const adoptHint = "it has no profilekit comment, as the first release made its roles; a login proves nothing, since the password may come from the tenant's namespace: the host's database.adopt takes it over"

// roleVerdict says whether the role is the plugin's for spec's Profile: it
// carries the proof (the Profile's, or one of its owner's earlier Profiles
// of the name). Nothing else is proof: not a password that logs in as it,
// which may come from a Secret the tenant wrote. A role that is not ours
// gives the reason.
func roleVerdict(r *RoleState, spec DatabaseSpec) (ours bool, why string) {
	switch {
	case spec.proves(r.Comment):
		return true, ""
	case len(r.Privileged) > 0:
		return false, "it holds " + strings.Join(r.Privileged, ", ")
	case someonesProof(r.Comment):
		return false, otherProof
	case r.Comment != "":
		return false, fmt.Sprintf("its comment is %q", r.Comment)
	}
	return false, adoptHint
}

// databaseOurs reports whether a database is the plugin's: it carries the
// proof, or it carries no comment and belongs to a role of ours that cannot
// create databases itself, so that only an administrator made it: the
// plugin, stopped between CREATE DATABASE and COMMENT, or the first release
// (whose role is ours only once adopted).
func databaseOurs(d *DatabaseState, r *RoleState, roleOurs bool, spec DatabaseSpec) bool {
	return spec.proves(d.Comment) ||
		d.Comment == "" && roleOurs && d.Owner == spec.Role && r != nil && !r.CreateDB
}

// planEnsure decides what Ensure writes. A role or database with the wanted
// name that is not the plugin's is a Conflict, unless spec.Adopt allows
// taking it over (never a role with the rights of RoleState.Privileged, nor
// one that is a member of other roles); a Conflict writes nothing at all.
//
// A role of ours that exists gets checkLogin: Ensure tries the host's
// password and sets it when it does not log in, so that the database
// Secret never holds a password that fails while the condition says True.
func planEnsure(cat Catalog, spec DatabaseSpec) (ensurePlan, error) {
	var p ensurePlan
	var errs []error
	roleOurs := false
	switch r := cat.Role; r {
	case nil:
		p.createRole, roleOurs = true, true
	default:
		ours, why := roleVerdict(r, spec)
		switch {
		case ours:
			roleOurs = true
			p.checkLogin = true
			p.markRole = r.Comment != spec.Proof
		case spec.Adopt && len(r.Privileged) == 0 && r.MemberOf == 0 && !someonesProof(r.Comment):
			roleOurs = true
			p.alterPassword, p.markRole = true, true
		default:
			if spec.Adopt && r.MemberOf > 0 {
				why += fmt.Sprintf("; it is a member of %d roles, which adoption refuses", r.MemberOf)
			}
			errs = append(errs, conflict("role", spec.Role, spec.Profile, why))
		}
	}
	switch d := cat.Database; {
	case d == nil:
		p.createDatabase, p.markDatabase = true, true
	case databaseOurs(d, cat.Role, roleOurs, spec):
		p.markDatabase = d.Comment != spec.Proof
	case spec.Adopt && roleOurs && !someonesProof(d.Comment):
		p.ownDatabase = d.Owner != spec.Role
		p.markDatabase = true
	default:
		errs = append(errs, conflict("database", spec.Database, spec.Profile, describeDatabase(d)))
	}
	if len(errs) > 0 {
		return ensurePlan{}, errors.Join(errs...)
	}
	return p, nil
}

// dropPlan is what Drop removes.
type dropPlan struct {
	database bool
	role     bool
}

// planDrop decides what Drop removes: only what is the plugin's for spec's
// Profile. Anything else under the wanted names is a Conflict, and then
// nothing is dropped.
func planDrop(cat Catalog, spec DatabaseSpec) (dropPlan, error) {
	var p dropPlan
	var errs []error
	roleOurs := false
	if r := cat.Role; r != nil {
		ours, why := roleVerdict(r, spec)
		if !ours {
			errs = append(errs, conflict("role", spec.Role, spec.Profile, why))
		}
		roleOurs, p.role = ours, ours
	}
	if d := cat.Database; d != nil {
		if !databaseOurs(d, cat.Role, roleOurs, spec) {
			errs = append(errs, conflict("database", spec.Database, spec.Profile, describeDatabase(d)))
		}
		p.database = true
	}
	if len(errs) > 0 {
		return dropPlan{}, errors.Join(errs...)
	}
	return p, nil
}

func conflict(what, name, profile, why string) error {
	return plugins.Terminalf(plugins.ReasonConflict, "%s %s exists and was not made by profilekit for profile %s (%s); left untouched", what, name, profile, why)
}

func describeDatabase(d *DatabaseState) string {
	switch {
	case d.Comment == "":
		return fmt.Sprintf("owner %s, no profilekit comment", d.Owner)
	case someonesProof(d.Comment):
		return fmt.Sprintf("owner %s; %s", d.Owner, otherProof)
	}
	return fmt.Sprintf("owner %s, comment %q", d.Owner, d.Comment)
}
