package gitea

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/profilekit/profilekit/plugins"
)

// Server runs the plugin's statements on one PostgreSQL server. Every name
// is quoted as an identifier and every value sent as a parameter or a
// quoted literal. Each verb reads the catalog first, decides from it alone
// (planEnsure, planDrop) and writes only what is missing, and only to what
// carries the plugin's proof for the Profile.
type Server struct {
	Connector Connector
}

func (s Server) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := s.Connector.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

const (
	roleSQL = `SELECT r.rolsuper, r.rolcreaterole, r.rolbypassrls, r.rolreplication, r.rolcreatedb,
	pg_catalog.shobj_description(r.oid, 'pg_authid'),
	(SELECT count(*) FROM pg_catalog.pg_auth_members m WHERE m.member = r.oid)
FROM pg_catalog.pg_roles r WHERE r.rolname = $1`
	databaseSQL = `SELECT pg_catalog.pg_get_userbyid(d.datdba), pg_catalog.shobj_description(d.oid, 'pg_database')
FROM pg_catalog.pg_database d WHERE d.datname = $1`
)

// Inspect reads what the server holds under spec's names.
func (s Server) Inspect(ctx context.Context, spec DatabaseSpec) (Catalog, error) {
	var cat Catalog
	err := s.with(ctx, func(conn *pgx.Conn) error {
		var err error
		cat, err = inspect(ctx, conn, spec)
		return err
	})
	return cat, err
}

func inspect(ctx context.Context, conn *pgx.Conn, spec DatabaseSpec) (Catalog, error) {
	var cat Catalog
	var super, createRole, bypassRLS, replication, createDB bool
	var comment *string
	var member int
	err := conn.QueryRow(ctx, roleSQL, spec.Role).Scan(&super, &createRole, &bypassRLS, &replication, &createDB, &comment, &member)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return Catalog{}, fmt.Errorf("read role %s: %w", spec.Role, err)
	default:
		r := &RoleState{CreateDB: createDB, MemberOf: member, Comment: deref(comment)}
		for _, p := range []struct {
			on   bool
			name string
		}{{super, "SUPERUSER"}, {createRole, "CREATEROLE"}, {bypassRLS, "BYPASSRLS"}, {replication, "REPLICATION"}} {
			if p.on {
				r.Privileged = append(r.Privileged, p.name)
			}
		}
		cat.Role = r
	}
	var owner string
	comment = nil
	err = conn.QueryRow(ctx, databaseSQL, spec.Database).Scan(&owner, &comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return Catalog{}, fmt.Errorf("read database %s: %w", spec.Database, err)
	default:
		cat.Database = &DatabaseState{Owner: owner, Comment: deref(comment)}
	}
	return cat, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Ensure makes the role and the database owned by it exist, both carrying
// spec.Proof, with password as the role's password: a role of the
// plugin's on which password does not log in is given it (never one with
// the rights of RoleState.Privileged), and an adopted one always. It
// reports what it changed. Anything else under spec's names is a Conflict
// and nothing is written (see planEnsure).
func (s Server) Ensure(ctx context.Context, spec DatabaseSpec, password string) ([]plugins.Change, error) {
	var changes []plugins.Change
	err := s.with(ctx, func(conn *pgx.Conn) error {
		cat, err := inspect(ctx, conn, spec)
		if err != nil {
			return err
		}
		p, err := planEnsure(cat, spec)
		if err != nil {
			return err
		}
		if p.checkLogin {
			in, err := s.Connector.LogsIn(ctx, spec.Role, password, loginDatabase(cat, spec))
			if err != nil {
				return err
			}
			if !in && len(cat.Role.Privileged) > 0 {
				return plugins.Terminalf(plugins.ReasonConflict, "role %s holds %s; its password is not changed", spec.Role, strings.Join(cat.Role.Privileged, ", "))
			}
			p.alterPassword = !in
		}
		changes, err = s.write(ctx, conn, spec, p, password)
		return err
	})
	return changes, err
}

// loginDatabase is the database a role's login is tried on: its own, or
// the administrator's when it has none.
func loginDatabase(cat Catalog, spec DatabaseSpec) string {
	if cat.Database != nil && cat.Database.Owner == spec.Role {
		return spec.Database
	}
	return ""
}

func (s Server) write(ctx context.Context, conn *pgx.Conn, spec DatabaseSpec, p ensurePlan, password string) ([]plugins.Change, error) {
	var changes []plugins.Change
	role, db := quoteIdent(spec.Role), quoteIdent(spec.Database)
	markRole := "COMMENT ON ROLE " + role + " IS " + quoteLiteral(spec.Proof)
	if p.createRole || p.alterPassword || p.markRole {
		var stmts []string
		action := plugins.Configured
		if p.createRole || p.alterPassword {
			verifier, err := scramVerifier(password)
			if err != nil {
				return nil, err
			}
			if p.createRole {
				action = plugins.Created
				stmts = append(stmts, "CREATE ROLE "+role+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD "+quoteLiteral(verifier))
			} else {
				stmts = append(stmts, "ALTER ROLE "+role+" PASSWORD "+quoteLiteral(verifier))
			}
		}
		// The role and its proof are one transaction: no role of ours is
		// ever without it.
		if err := inTx(ctx, conn, append(stmts, markRole)...); err != nil {
			return nil, fmt.Errorf("make role %s: %w", spec.Role, err)
		}
		changes = append(changes, plugins.Change{Kind: "PostgresRole", Name: spec.Role, Action: action})
	}
	if !p.createDatabase && !p.ownDatabase && !p.markDatabase {
		return changes, nil
	}
	// An administrator that is not a superuser (a managed server's) must be
	// a member of the role to make it a database's owner or comment on it.
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		return changes, fmt.Errorf("read administrator: %w", err)
	}
	if !super {
		if _, err := conn.Exec(ctx, "GRANT "+role+" TO CURRENT_USER"); err != nil {
			return changes, fmt.Errorf("grant role %s to the administrator: %w", spec.Role, err)
		}
	}
	action := plugins.Configured
	var stmts []string
	switch {
	case p.createDatabase:
		action = plugins.Created
		// CREATE DATABASE cannot run in a transaction: the comment comes
		// last, and a database without it that belongs to our role is
		// finished on the next pass (databaseOurs).
		stmts = append(stmts, "CREATE DATABASE "+db+" OWNER "+role+
			" TEMPLATE "+quoteIdent(spec.Template)+
			" ENCODING "+quoteLiteral(spec.Encoding)+
			" LC_COLLATE "+quoteLiteral(spec.LCCollate)+
			" LC_CTYPE "+quoteLiteral(spec.LCCtype))
	case p.ownDatabase:
		stmts = append(stmts, "ALTER DATABASE "+db+" OWNER TO "+role)
	}
	stmts = append(stmts,
		"REVOKE ALL ON DATABASE "+db+" FROM PUBLIC",
		"COMMENT ON DATABASE "+db+" IS "+quoteLiteral(spec.Proof))
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return changes, fmt.Errorf("make database %s: %w", spec.Database, err)
		}
	}
	return append(changes, plugins.Change{Kind: "PostgresDatabase", Name: spec.Database, Action: action}), nil
}

func inTx(ctx context.Context, conn *pgx.Conn, stmts ...string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// Drop terminates the connections to the database, then drops it and the
// role, when they carry the plugin's proof for spec's Profile (see
// planDrop). What is already gone is done. Anything else under spec's
// names is a Conflict, and then nothing is dropped.
func (s Server) Drop(ctx context.Context, spec DatabaseSpec) ([]plugins.Change, error) {
	var changes []plugins.Change
	err := s.with(ctx, func(conn *pgx.Conn) error {
		cat, err := inspect(ctx, conn, spec)
		if err != nil {
			return err
		}
		p, err := planDrop(cat, spec)
		if err != nil {
			return err
		}
		if p.database {
			if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE datname = $1 AND pid <> pg_catalog.pg_backend_pid()", spec.Database); err != nil {
				return fmt.Errorf("terminate connections to %s: %w", spec.Database, err)
			}
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(spec.Database)+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop database %s: %w", spec.Database, err)
			}
			changes = append(changes, plugins.Change{Kind: "PostgresDatabase", Name: spec.Database, Action: plugins.Deleted})
		}
		if p.role {
			if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+quoteIdent(spec.Role)); err != nil {
				return fmt.Errorf("drop role %s: %w", spec.Role, err)
			}
			changes = append(changes, plugins.Change{Kind: "PostgresRole", Name: spec.Role, Action: plugins.Deleted})
		}
		return nil
	})
	return changes, err
}
