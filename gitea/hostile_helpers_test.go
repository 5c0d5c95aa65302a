package gitea_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// legacyName is the name the first release gave: prefix and namespace, or,
// longer than 63 bytes, their first 54 bytes, a dash and 8 hex digits.
func legacyName(prefix, ns string) string {
	s := prefix + ns
	if len(s) <= gitea.MaxIdentifier {
		return s
	}
	return s[:54] + "-" + hashOf(s)
}

// longName returns a unique namespace of n characters.
func longName(base string, n int) string {
	s := newName(base) + "-"
	return s + strings.Repeat("v", n-len(s))
}

// crafted returns the Profile name whose short name was victim's hashed
// name in the first release: its first 48 characters, a dash and the
// victim's 8 hex digits, 57 characters in all.
func crafted(victim string) string {
	return strings.TrimPrefix(legacyName(prefix, victim), prefix)
}

// login reports whether user can open database with password.
func login(t *testing.T, user, password, database string) error {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.DSN(user, password, database, "verify-full", caFile(t)))
	if err != nil {
		return err
	}
	return conn.Close(t.Context())
}

// sqlExec runs statements as the server's superuser, also from a cleanup,
// when the test's context is done.
func sqlExec(t *testing.T, stmts ...string) {
	t.Helper()
	// Not canceled with the test: cleanups run after t.Context() is done.
	ctx := context.WithoutCancel(t.Context())
	conn, err := pgx.Connect(ctx, pg.DSN(pg.User, pg.Password, "postgres", "verify-full", sharedCA))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// catalogRole is what pg_authid holds for one role: its password verifier
// and comment ("" when it has none). ok is false when there is no role.
func catalogRole(t *testing.T, name string) (verifier, comment string, ok bool) {
	t.Helper()
	admin(t, func(c *pgx.Conn) {
		var v, cm *string
		err := c.QueryRow(t.Context(), "SELECT rolpassword, shobj_description(oid, 'pg_authid') FROM pg_authid WHERE rolname = $1", name).Scan(&v, &cm)
		if errors.Is(err, pgx.ErrNoRows) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		ok = true
		if v != nil {
			verifier = *v
		}
		if cm != nil {
			comment = *cm
		}
	})
	return verifier, comment, ok
}

// catalogDatabase is a database's owner and comment.
func catalogDatabase(t *testing.T, name string) (owner, comment string, ok bool) {
	t.Helper()
	admin(t, func(c *pgx.Conn) {
		var cm *string
		err := c.QueryRow(t.Context(), "SELECT pg_get_userbyid(datdba), shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&owner, &cm)
		if errors.Is(err, pgx.ErrNoRows) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		ok = true
		if cm != nil {
			comment = *cm
		}
	})
	return owner, comment, ok
}

// expectCondition waits for the Profile's condition to have status and a
// message holding msg, and reports (without stopping the test) when it does
// not, so that the assertions on PostgreSQL that follow still run.
func expectCondition(t *testing.T, name, status, msg string) kubeflowv1.ProfileCondition {
	t.Helper()
	var got kubeflowv1.ProfileCondition
	deadline := time.Now().Add(20 * time.Second)
	for {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if c := plugins.FindCondition(p.Status.Conditions, condType); c != nil {
			got = *c
			if c.Status == status && strings.Contains(c.Message, msg) {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("%s of %s is %s %q, want %s with %q", condType, name, got.Status, got.Message, status, msg)
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deleteProfile deletes the Profile, plays Argo CD for its Application if
// it has one, and waits until the Profile is gone.
func deleteProfile(t *testing.T, p *kubeflowv1.Profile) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if _, ok := application(t, p.Name); ok {
		finishArgoCD(t, p.Name)
	}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: p.Name}, &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v", err)
	})
}

// stopBefore is a tracer that fails every statement starting with sql
// before it is sent, as a host that stops just before it would.
type stopBefore string

func (s stopBefore) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, string(s)) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		return ctx
	}
	return ctx
}

func (stopBefore) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// profileProof returns the proof the plugin writes for the Profile name.
func profileProof(t *testing.T, name string) string {
	t.Helper()
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return gitea.Proof("unclassified", &p)
}
