package gitea_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// TestDatabaseDoesNotChangeHands: alice's team keeps data in the role and
// database gitea_<name>, made by alice's Profile or by the first release
// (no proof), and her Profile is deleted with retention Retain. Mallory
// registers the name: her Profile is a Conflict, and the role and database
// are left exactly as they were (no comment, no password, no drop), also
// once mallory's tenant has written the database Secret with our labels
// and alice's old password, and also when mallory's Profile is deleted by a
// host with retention Delete. Alice coming back finds her data untouched.
// A database her earlier Profile made is served (its proof names that
// Profile's UID, which her tenure of the name proves hers). One of the
// first release carries no proof at all: a password that logs in as it
// proves nothing (it may come from a Secret the tenant wrote), so alice's
// Profile is a Conflict that names the host's adoption, and nothing is
// altered; only the host's database.adopt takes it over. After an
// administrator releases the name, mallory's Profile is served: a Conflict
// of its own, since role and database carry the proof of one of alice's
// Profiles, or none.
func TestDatabaseDoesNotChangeHands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		// firstRelease makes role and database as the first release did,
		// without a proof, while alice's Profile does not run the instance.
		firstRelease bool
	}{
		{reason: "made by alice's Profile"},
		{reason: "made by the first release", firstRelease: true},
	} {
		t.Run(tc.reason, func(t *testing.T) { databaseDoesNotChangeHands(t, tc.firstRelease) })
	}
}

func databaseDoesNotChangeHands(t *testing.T, firstRelease bool) {
	name := newName("gitea-tenure")
	db := gitea.Name(prefix, name)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), ns) //nolint:forbidigo // cleanups run after t.Context is canceled
		sqlExec(t, fmt.Sprintf("DROP DATABASE IF EXISTS %q WITH (FORCE)", db), fmt.Sprintf("DROP ROLE IF EXISTS %q", db))
	})
	profileOf := func(owner, optInValue string) *kubeflowv1.Profile {
		p := testhost.ProfileOf(t, env.Client, name, owner)
		setLabel(t, name, optInValue)
		return p
	}
	remove := func(st *testing.T, p *kubeflowv1.Profile) {
		st.Helper()
		deleteProfile(st, p)
	}

	read := func(st *testing.T) kept {
		st.Helper()
		var s kept
		var ok bool
		if s.verifier, s.roleComment, ok = catalogRole(st, db); !ok {
			st.Fatalf("role %s is gone", db)
		}
		if s.owner, s.dbComment, ok = catalogDatabase(st, db); !ok {
			st.Fatalf("database %s is gone", db)
		}
		s.data = teamData(st, db)
		return s
	}
	var password string
	var was kept

	t.Run("first host", func(st *testing.T) {
		start(st, opts{})
		if firstRelease {
			password = rand.String(30)
			sqlExec(st, fmt.Sprintf("CREATE ROLE %q LOGIN PASSWORD '%s'", db, password), fmt.Sprintf("CREATE DATABASE %q OWNER %q", db, db))
			alice := profileOf(testhost.Alice, "false")
			testhost.WaitCondition(st, env.Client, name, condType, plugins.ConditionTrue, "")
			putTeamData(st, db)
			remove(st, alice)
		} else {
			alice := profileOf(testhost.Alice, "true")
			proof := profileProof(st, name)
			testhost.Eventually(st, 20*time.Second, func() (bool, string) {
				_, comment, _ := catalogRole(st, db)
				_, has := secret(st, name)
				return comment == proof && has, fmt.Sprintf("role comment %q, Secret %v", comment, has)
			})
			if cond := testhost.CurrentCondition(st, env.Client, name, condType); cond.Status != plugins.ConditionTrue {
				st.Fatalf("alice's Profile: %s=%s %s", condType, cond.Status, cond.Message)
			}
			password = string(mustSecret(st, name).Data[gitea.KeyPassword])
			putTeamData(st, db)
			if s := read(st); s.roleComment != proof || s.dbComment != proof {
				st.Fatalf("alice's role and database do not carry her proof: %+v", s)
			}
			remove(st, alice)
		}
		was = read(st)
		st.Logf("kept under the name after alice's Profile went: role comment %q, database comment %q, data %q", was.roleComment, was.dbComment, was.data)

		mallory := profileOf(testhost.Mallory, "true")
		cond := testhost.WaitTenureConflict(st, env.Client, name, condType)
		st.Logf("mallory's Profile: %s=%s %s", condType, cond.Status, cond.Message)

		// Mallory's tenant writes the database Secret as the plugin would,
		// with alice's old password (a former contributor of alice's could
		// have read it).
		tenantWritesSecret(st, name, db, password)
		reverify(st, name)
		time.Sleep(2 * time.Second)
		unchanged(st, db, was, read(st), mallory)
		cond = testhost.WaitTenureConflict(st, env.Client, name, condType)
		st.Logf("mallory's Profile with her tenant's Secret: %s=%s %s", condType, cond.Status, cond.Message)
	})

	t.Run("after a restart, with retention Delete", func(st *testing.T) {
		_, sql := start(st, opts{retention: plugins.RetentionDelete})
		reverify(st, name)
		time.Sleep(2 * time.Second)
		testhost.WaitTenureConflict(st, env.Client, name, condType)
		var mallory kubeflowv1.Profile
		if err := env.Client.Get(st.Context(), client.ObjectKey{Name: name}, &mallory); err != nil {
			st.Fatal(err)
		}
		unchanged(st, db, was, read(st), &mallory)
		remove(st, &mallory)
		unchanged(st, db, was, read(st), &mallory)
		// The host serves every Profile of the package's tests: only
		// writes that name this test's role or database count.
		_, writes := sql.counts()
		if ours := slices.DeleteFunc(writes, func(w string) bool { return !strings.Contains(w, db) }); len(ours) > 0 {
			st.Errorf("the host sent writes to PostgreSQL for mallory's Profile: %q", ours)
		}
	})

	t.Run("alice back", func(st *testing.T) {
		start(st, opts{})
		alice := profileOf(testhost.Alice, "true")
		if firstRelease {
			// No proof names her: the Secret in her namespace (which
			// mallory's tenant wrote, with alice's old password) logs in as
			// the role, and that proves nothing. A Conflict that names the
			// host's adoption, and nothing altered.
			cond := expectCondition(st, name, plugins.ConditionFalse, "database.adopt")
			st.Logf("alice back: %s=%s %s", condType, cond.Status, cond.Message)
			unchanged(st, db, was, read(st), alice)
		} else {
			// The proof names her earlier Profile's UID, which her tenure
			// of the name proves hers: served, and stamped for her
			// Profile of now.
			cond := expectCondition(st, name, plugins.ConditionTrue, "")
			st.Logf("alice back: %s=%s %s", condType, cond.Status, cond.Message)
		}
		if got := read(st); got.data != was.data {
			st.Errorf("alice's data is %q, want %q", got.data, was.data)
		}
		before := read(st)
		remove(st, alice)

		testhost.ReleaseName(st, env.Client, name)
		mallory := profileOf(testhost.Mallory, "true")
		// Served: the role and database carry the proof of one of
		// alice's Profiles, which is no proof for mallory's, or none.
		want := "proof for another Profile"
		if firstRelease {
			want = "database.adopt"
		}
		cond := expectCondition(st, name, plugins.ConditionFalse, want)
		st.Logf("mallory after the release: %s=%s %s", condType, cond.Status, cond.Message)
		unchanged(st, db, before, read(st), mallory)
	})
}

// kept is what PostgreSQL holds under a name: the role's password verifier
// and comment, the database's owner and comment, and the team's data.
type kept struct{ verifier, roleComment, owner, dbComment, data string }

// unchanged checks that the role and database under the name, and the data
// in it, are as they were, and that neither names mallory's Profile.
func unchanged(t *testing.T, db string, want, got kept, mallory *kubeflowv1.Profile) {
	t.Helper()
	if got != want {
		t.Errorf("what is kept under the name changed:\n got %+v\nwant %+v", got, want)
	}
	if uid := string(mallory.UID); uid != "" && (strings.Contains(got.roleComment, uid) || strings.Contains(got.dbComment, uid)) {
		t.Errorf("%s carries the proof of mallory's Profile: role %q, database %q", db, got.roleComment, got.dbComment)
	}
}

// putTeamData makes a table with a row in database db, as the superuser.
func putTeamData(t *testing.T, db string) {
	t.Helper()
	withDatabase(t, db, func(c *pgx.Conn) {
		for _, s := range []string{"CREATE TABLE team_notes (note text)", "INSERT INTO team_notes VALUES ('alice''s team was here')"} {
			if _, err := c.Exec(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

// teamData returns the rows of putTeamData's table, "" when there is none.
func teamData(t *testing.T, db string) string {
	t.Helper()
	var out string
	withDatabase(t, db, func(c *pgx.Conn) {
		if err := c.QueryRow(t.Context(), "SELECT coalesce(string_agg(note, ','), '') FROM team_notes").Scan(&out); err != nil {
			t.Fatalf("read the team's data in %s: %v", db, err)
		}
	})
	return out
}

func withDatabase(t *testing.T, db string, fn func(*pgx.Conn)) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, db, "verify-full", caFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background()) //nolint:forbidigo // no *testing.T in reach
	fn(conn)
}

// tenantWritesSecret writes the database Secret in namespace ns as a tenant
// with Kubeflow's rights there: our labels, role db and password.
func tenantWritesSecret(t *testing.T, ns, db, password string) {
	t.Helper()
	tenant := testhost.Tenant(t, env, ns)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gitea.SecretName("unclassified"), Namespace: ns, Labels: plugins.OwnershipLabels(gitea.Kind, ns)},
		Data: map[string][]byte{gitea.KeyUser: []byte(db), gitea.KeyDatabase: []byte(db), gitea.KeyPassword: []byte(password)}}
	err := tenant.Create(t.Context(), s)
	if apierrors.IsAlreadyExists(err) {
		var live corev1.Secret
		if err = tenant.Get(t.Context(), client.ObjectKeyFromObject(s), &live); err == nil {
			live.Labels, live.Data = s.Labels, s.Data
			err = tenant.Update(t.Context(), &live)
		}
	}
	if err != nil {
		t.Fatalf("the tenant's Secret: %v", err)
	}
}

// reverify asks every plugin with outside state for a pass that calls the
// outside system.
func reverify(t *testing.T, name string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[plugins.AnnotationReverify] = time.Now().Format(time.RFC3339Nano)
	})
}
