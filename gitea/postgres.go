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
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/profilekit/profilekit/plugins"
)

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
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return conn, nil
}

func (c Connector) config() (*pgx.ConnConfig, error) {
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
	return cfg, nil
}

// LogsIn reports whether role logs in with password to database (the
// administrator's database when empty), through the administrator's host,
// port and TLS settings. A refusal by the server is false; a server that
// cannot be reached is an error.
func (c Connector) LogsIn(ctx context.Context, role, password, database string) (bool, error) {
	cfg, err := c.config()
	if err != nil {
		return false, err
	}
	cfg.User, cfg.Password = role, password
	if database != "" {
		cfg.Database = database
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && refusal(pgErr.Code):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("log in to PostgreSQL %s:%d as %s: %w", cfg.Host, cfg.Port, role, err)
	}
	return true, conn.Close(context.WithoutCancel(ctx))
}

// refusal reports whether a server's error code refuses a login: a wrong
// password or a role that may not log in (class 28), or a database the role
// may not open.
func refusal(code string) bool {
	return strings.HasPrefix(code, "28") || code == "3D000" || code == "42501"
}

// DatabaseSpec is one role and database to make true on a server, and
// what proves them the plugin's.
type DatabaseSpec struct {
	Role      string `json:"role"`
	Database  string `json:"database"`
	Encoding  string `json:"encoding"`
	LCCollate string `json:"lcCollate"`
	LCCtype   string `json:"lcCtype"`
	Template  string `json:"template"`
	// Profile names the Profile in conflicts.
	Profile string `json:"profile"`
	// Proof is the comment (see Proof) that role and database carry.
	Proof string `json:"proof"`
	// Earlier are the proofs of the earlier Profiles of the name that the
	// Profile's owner held (plugins.Outside.Predecessors): a role or
	// database that carries one is the Profile's, and is stamped with Proof.
	Earlier []string `json:"-"`
	// Adopt lets Ensure take over a role and database of these names that
	// are not the plugin's (see Database.Adopt).
	Adopt bool `json:"adopt,omitempty"`
}
