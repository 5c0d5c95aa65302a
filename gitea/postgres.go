package gitea

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/profilekit/profilekit/plugins"
)

// MaxIdentifier is PostgreSQL's limit on a name, in bytes.
const MaxIdentifier = 63

// Name returns the role and database name for namespace ns: prefix + ns when
// that fits in 63 bytes, else its first 54 bytes, a dash and 8 hex digits
// of its SHA-256, so that two long namespaces never share a name.
func Name(prefix, ns string) string {
	s := prefix + ns
	if len(s) <= MaxIdentifier {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:MaxIdentifier-9] + "-" + hex.EncodeToString(sum[:4])
}

// quoteIdent quotes a name as a PostgreSQL identifier.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// quoteLiteral quotes s as a PostgreSQL string literal (standard strings).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// NewPassword returns 32 random bytes as URL-safe base64 (43 characters).
func NewPassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// scramVerifier returns the SCRAM-SHA-256 verifier PostgreSQL stores for
// password, so that the password itself never reaches the server (or its
// statement log).
func scramVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	const iterations = 4096
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	serverKey := mac(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(serverKey)), nil
}

// Connector opens administrator connections to one PostgreSQL server.
type Connector struct {
	// DSN is the administrator's connection URL.
	DSN string
	// SSLMode is verify-full or disable; it overrides the DSN's.
	SSLMode string
	// CA is the PEM that verifies the server, for verify-full.
	CA []byte
	// Tracer, when set, sees every statement (tests count them).
	Tracer pgx.QueryTracer
}

// Connect opens a connection. A DSN that does not parse or a CA that holds
// no certificate is a terminal InvalidConfig error; the DSN is never part
// of an error.
func (c Connector) Connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(c.DSN)
	if err != nil {
		return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "the administrator DSN does not parse as a PostgreSQL connection URL")
	}
	cfg.Fallbacks = nil
	switch c.SSLMode {
	case SSLDisable:
		cfg.TLSConfig = nil
	default:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CA) {
			return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "the CA for verify-full holds no PEM certificate")
		}
		cfg.TLSConfig = &tls.Config{RootCAs: pool, ServerName: cfg.Host, MinVersion: tls.VersionTLS12}
	}
	if c.Tracer != nil {
		cfg.Tracer = c.Tracer
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return conn, nil
}

// DatabaseSpec is one role and database to make true on a server.
type DatabaseSpec struct {
	Role      string `json:"role"`
	Database  string `json:"database"`
	Encoding  string `json:"encoding"`
	LCCollate string `json:"lcCollate"`
	LCCtype   string `json:"lcCtype"`
	Template  string `json:"template"`
}

// Server runs the plugin's statements on one PostgreSQL server. Every name
// is quoted as an identifier and every value sent as a parameter or a
// quoted literal; reads come first, and a write is sent only for what is
// missing.
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

func exists(ctx context.Context, conn *pgx.Conn, query, name string) (bool, error) {
	var n int
	if err := conn.QueryRow(ctx, query, name).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

const (
	roleExistsSQL     = "SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname = $1"
	databaseExistsSQL = "SELECT count(*) FROM pg_catalog.pg_database WHERE datname = $1"
)

// RoleExists reports whether role exists.
func (s Server) RoleExists(ctx context.Context, role string) (bool, error) {
	var ok bool
	err := s.with(ctx, func(conn *pgx.Conn) error {
		var err error
		ok, err = exists(ctx, conn, roleExistsSQL, role)
		return err
	})
	return ok, err
}

// Ensure makes the role (with password, when it is new or setPassword is
// true) and the database owned by it exist, and reports what it changed.
func (s Server) Ensure(ctx context.Context, spec DatabaseSpec, password string, setPassword bool) ([]plugins.Change, error) {
	var changes []plugins.Change
	err := s.with(ctx, func(conn *pgx.Conn) error {
		role := quoteIdent(spec.Role)
		hasRole, err := exists(ctx, conn, roleExistsSQL, spec.Role)
		if err != nil {
			return fmt.Errorf("read role: %w", err)
		}
		if !hasRole || setPassword {
			verifier, err := scramVerifier(password)
			if err != nil {
				return err
			}
			stmt := "CREATE ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD " + quoteLiteral(verifier)
			action := plugins.Created
			if hasRole {
				stmt = "ALTER ROLE " + role + " PASSWORD " + quoteLiteral(verifier)
				action = plugins.Configured
			}
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s role %s: %w", strings.TrimSuffix(string(action), "d"), spec.Role, err)
			}
			changes = append(changes, plugins.Change{Kind: "PostgresRole", Name: spec.Role, Action: action})
		}
		hasDB, err := exists(ctx, conn, databaseExistsSQL, spec.Database)
		if err != nil {
			return fmt.Errorf("read database: %w", err)
		}
		if hasDB {
			return nil
		}
		// An administrator that is not a superuser (a managed server's)
		// must be a member of the role to make it a database's owner.
		var super bool
		if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
			return fmt.Errorf("read administrator: %w", err)
		}
		if !super {
			if _, err := conn.Exec(ctx, "GRANT "+role+" TO CURRENT_USER"); err != nil {
				return fmt.Errorf("grant role %s to the administrator: %w", spec.Role, err)
			}
		}
		stmt := "CREATE DATABASE " + quoteIdent(spec.Database) + " OWNER " + role +
			" TEMPLATE " + quoteIdent(spec.Template) +
			" ENCODING " + quoteLiteral(spec.Encoding) +
			" LC_COLLATE " + quoteLiteral(spec.LCCollate) +
			" LC_CTYPE " + quoteLiteral(spec.LCCtype)
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("create database %s: %w", spec.Database, err)
		}
		if _, err := conn.Exec(ctx, "REVOKE ALL ON DATABASE "+quoteIdent(spec.Database)+" FROM PUBLIC"); err != nil {
			return fmt.Errorf("revoke public access to database %s: %w", spec.Database, err)
		}
		changes = append(changes, plugins.Change{Kind: "PostgresDatabase", Name: spec.Database, Action: plugins.Created})
		return nil
	})
	return changes, err
}

// Drop terminates the connections to the database, then drops it and the
// role. What is already gone is done.
func (s Server) Drop(ctx context.Context, spec DatabaseSpec) ([]plugins.Change, error) {
	var changes []plugins.Change
	err := s.with(ctx, func(conn *pgx.Conn) error {
		hasDB, err := exists(ctx, conn, databaseExistsSQL, spec.Database)
		if err != nil {
			return fmt.Errorf("read database: %w", err)
		}
		if hasDB {
			if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE datname = $1 AND pid <> pg_catalog.pg_backend_pid()", spec.Database); err != nil {
				return fmt.Errorf("terminate connections to %s: %w", spec.Database, err)
			}
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(spec.Database)+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop database %s: %w", spec.Database, err)
			}
			changes = append(changes, plugins.Change{Kind: "PostgresDatabase", Name: spec.Database, Action: plugins.Deleted})
		}
		hasRole, err := exists(ctx, conn, roleExistsSQL, spec.Role)
		if err != nil {
			return fmt.Errorf("read role: %w", err)
		}
		if hasRole {
			if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+quoteIdent(spec.Role)); err != nil {
				return fmt.Errorf("drop role %s: %w", spec.Role, err)
			}
			changes = append(changes, plugins.Change{Kind: "PostgresRole", Name: spec.Role, Action: plugins.Deleted})
		}
		return nil
	})
	return changes, err
}

var errNoSecret = errors.New("secret not found")
