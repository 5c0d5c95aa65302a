package testenv_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/profilekit/profilekit/internal/testenv"
)

func TestPostgresVerifiesTLS(t *testing.T) {
	pg, err := testenv.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Close(); err != nil {
			t.Error(err)
		}
	})
	dir := t.TempDir()
	good := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(good, pg.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, otherPEM, err := testenv.NewTestCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "other.crt")
	if err := os.WriteFile(bad, otherPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, "postgres", "verify-full", good))
	if err != nil {
		t.Fatalf("verify-full with the server's CA: %v", err)
	}
	var ssl bool
	if err := conn.QueryRow(t.Context(), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(t.Context())
	if !ssl {
		t.Error("connection with sslmode=verify-full is not encrypted")
	}

	_, err = pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, "postgres", "verify-full", bad))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("verify-full with another CA: err = %v, want a certificate error", err)
	}

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, "postgres", "verify-full", good)); err == nil {
		t.Error("connected to a stopped server")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, "postgres", "verify-full", good))
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	_ = conn.Close(t.Context())
}
