package gitea_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// The hostile suite: crafted name collisions, roles and databases of
// others under the names a Profile wants, restarts at the worst moment and
// outages during deletion. Every assertion reads PostgreSQL's catalogs or
// the API server, never the plugin's own view.

func TestCraftedCollisionGetsItsOwnDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason        string
		attackerFirst bool
		rotate        bool
	}{
		{reason: "the crafted Profile first, lost passwords rotated", attackerFirst: true, rotate: true},
		{reason: "the crafted Profile first", attackerFirst: true},
		{reason: "the victim first, lost passwords rotated", rotate: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			start(t, opts{rotateLost: tc.rotate})
			victim := longName("victim", 60)
			attacker := crafted(victim)
			if len(attacker) != 57 || legacyName(prefix, attacker) != legacyName(prefix, victim) {
				t.Fatalf("crafted name %q (%d characters) does not meet %q's first-release name", attacker, len(attacker), victim)
			}
			order := []string{victim, attacker}
			if tc.attackerFirst {
				order = []string{attacker, victim}
			}
			for _, n := range order {
				newProfile(t, n, map[string]string{optIn: "true"})
				expectCondition(t, n, plugins.ConditionTrue, "")
			}
			a, v := mustSecret(t, attacker), mustSecret(t, victim)
			ua, uv := string(a.Data[gitea.KeyUser]), string(v.Data[gitea.KeyUser])
			t.Logf("victim %s: role %s; crafted %s: role %s", victim, uv, attacker, ua)
			if ua == uv {
				t.Errorf("both Profiles were given role %s", ua)
			}
			for _, s := range []struct{ who, user, pw, db string }{
				{"the crafted Profile", ua, string(a.Data[gitea.KeyPassword]), string(a.Data[gitea.KeyDatabase])},
				{"the victim", uv, string(v.Data[gitea.KeyPassword]), string(v.Data[gitea.KeyDatabase])},
			} {
				if err := login(t, s.user, s.pw, s.db); err != nil {
					t.Errorf("%s's Secret does not open its own database %s: %v", s.who, s.db, err)
				}
			}
			if err := login(t, uv, string(a.Data[gitea.KeyPassword]), string(v.Data[gitea.KeyDatabase])); err == nil {
				t.Errorf("the crafted Profile's password opens the victim's database %s", v.Data[gitea.KeyDatabase])
			}
		})
	}
}

func TestForeignRoleIsNeverTakenOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		attrs  string
		rotate bool
	}{
		{reason: "a SUPERUSER role, lost passwords rotated", attrs: "SUPERUSER", rotate: true},
		{reason: "a plain role, lost passwords rotated", rotate: true},
		{reason: "a plain role", attrs: "NOSUPERUSER"},
		{reason: "a CREATEROLE role, lost passwords rotated", attrs: "CREATEROLE", rotate: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			start(t, opts{rotateLost: tc.rotate, retention: plugins.RetentionDelete})
			name := newName("foreign-role")
			role := gitea.Name(prefix, name)
			foreignPW := rand.String(24)
			sqlExec(t, fmt.Sprintf("CREATE ROLE %q LOGIN %s PASSWORD '%s'", role, tc.attrs, foreignPW))
			t.Cleanup(func() {
				sqlExec(t, fmt.Sprintf("DROP DATABASE IF EXISTS %q", role), fmt.Sprintf("DROP ROLE IF EXISTS %q", role))
			})
			before, _, _ := catalogRole(t, role)

			p := newProfile(t, name, map[string]string{optIn: "true"})
			c := expectCondition(t, name, plugins.ConditionFalse, "role "+role+" exists and was not made by profilekit for profile "+name)
			t.Logf("condition: %s", c.Message)
			if !strings.HasPrefix(c.Message, plugins.ReasonConflict) {
				t.Errorf("message %q, want reason %s", c.Message, plugins.ReasonConflict)
			}
			if s, ok := secret(t, name); ok {
				if err := login(t, role, string(s.Data[gitea.KeyPassword]), "postgres"); err == nil {
					t.Errorf("the Profile's Secret logs in as the foreign role %s (%s)", role, tc.attrs)
				}
			}
			deleteProfile(t, p)

			after, comment, ok := catalogRole(t, role)
			switch {
			case !ok:
				t.Errorf("the foreign role %s was dropped", role)
			case after != before:
				t.Errorf("the foreign role %s has a new password verifier", role)
			case comment != "":
				t.Errorf("the foreign role %s was given the comment %q", role, comment)
			}
			if err := login(t, role, foreignPW, "postgres"); err != nil {
				t.Errorf("the foreign role's own password stopped working: %v", err)
			}
			if _, _, ok := catalogDatabase(t, role); ok {
				t.Errorf("a database %s owned by the foreign role was made", role)
			}
		})
	}
}

func TestForeignDatabaseIsNeverAdoptedOrDropped(t *testing.T) {
	t.Parallel()
	start(t, opts{retention: plugins.RetentionDelete})
	name := newName("foreign-db")
	db := gitea.Name(prefix, name)
	owner := "someone_else_" + rand.String(5)
	sqlExec(t, fmt.Sprintf("CREATE ROLE %q", owner), fmt.Sprintf("CREATE DATABASE %q OWNER %q", db, owner))
	t.Cleanup(func() {
		sqlExec(t, fmt.Sprintf("DROP DATABASE IF EXISTS %q", db), fmt.Sprintf("DROP ROLE IF EXISTS %q", db), fmt.Sprintf("DROP ROLE IF EXISTS %q", owner))
	})

	p := newProfile(t, name, map[string]string{optIn: "true"})
	c := expectCondition(t, name, plugins.ConditionFalse, "database "+db+" exists and was not made by profilekit for profile "+name)
	t.Logf("condition: %s", c.Message)
	if _, _, ok := catalogRole(t, db); ok {
		t.Errorf("role %s was made although its database is someone else's", db)
	}
	deleteProfile(t, p)

	got, comment, ok := catalogDatabase(t, db)
	switch {
	case !ok:
		t.Errorf("the foreign database %s was dropped", db)
	case got != owner:
		t.Errorf("the foreign database %s is now owned by %s, want %s", db, got, owner)
	case comment != "":
		t.Errorf("the foreign database %s was given the comment %q", db, comment)
	}
}

func TestRestartAtTheWorstMoment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason   string
		stop     stopBefore
		database bool
	}{
		{reason: "the host stops after the role is made, before the database", stop: "CREATE DATABASE"},
		{reason: "the host stops after the database is made, before its comment", stop: "COMMENT ON DATABASE", database: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			name := newName("gitea-crash")
			db := gitea.Name(prefix, name)
			newProfile(t, name, map[string]string{optIn: "true"})
			proof := profileProof(t, name)
			t.Run("the first host stops", func(t *testing.T) {
				start(t, opts{tracer: tc.stop})
				testhost.Eventually(t, 20*time.Second, func() (bool, string) {
					_, comment, ok := catalogRole(t, db)
					_, _, hasDB := catalogDatabase(t, db)
					return ok && comment == proof && hasDB == tc.database, fmt.Sprintf("role %v (comment %q), database %v", ok, comment, hasDB)
				})
				testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "make database")
			})
			if _, comment, _ := catalogDatabase(t, db); comment != "" {
				t.Fatalf("the database has comment %q before the second host", comment)
			}

			start(t, opts{})
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
			owner, comment, ok := catalogDatabase(t, db)
			if !ok || owner != db || comment != proof {
				t.Errorf("database %s: exists %v, owner %s, comment %q; want owner %s and the proof", db, ok, owner, comment, db)
			}
			admin(t, func(c *pgx.Conn) {
				var public bool
				if err := c.QueryRow(t.Context(), "SELECT has_database_privilege('public', $1, 'CONNECT')", db).Scan(&public); err != nil {
					t.Fatal(err)
				}
				if public {
					t.Errorf("anyone may connect to %s: its public access was never revoked", db)
				}
			})
			s := mustSecret(t, name)
			if err := login(t, db, string(s.Data[gitea.KeyPassword]), db); err != nil {
				t.Errorf("the Secret does not open the database: %v", err)
			}
		})
	}
}

// TestFirstReleaseDatabaseIsNotTakenOnALogin: a role and database as the
// first release made them (no comment), and the Secret it wrote in the
// Profile's namespace, which the tenant can write. Whether its password
// logs in or not, that proves nothing: a Conflict that names the host's
// adoption, nothing touched, not even by a deletion with retention Delete.
func TestFirstReleaseDatabaseIsNotTakenOnALogin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		wrong  bool
	}{
		{reason: "the Secret's password logs in: still a Conflict"},
		{reason: "the Secret's password does not log in: nothing is touched, not even by a deletion with retention Delete", wrong: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			ret := plugins.RetentionRetain
			if tc.wrong {
				ret = plugins.RetentionDelete
			}
			start(t, opts{retention: ret})
			name := newName("gitea-old")
			role := gitea.Name(prefix, name)
			pw := rand.String(30)
			sqlExec(t, fmt.Sprintf("CREATE ROLE %q LOGIN PASSWORD '%s'", role, pw),
				fmt.Sprintf("CREATE DATABASE %q OWNER %q", role, role))
			t.Cleanup(func() {
				sqlExec(t, fmt.Sprintf("DROP DATABASE IF EXISTS %q", role), fmt.Sprintf("DROP ROLE IF EXISTS %q", role))
			})
			secretPW := pw
			if tc.wrong {
				secretPW = rand.String(30)
			}
			p := newProfile(t, name, map[string]string{optIn: "false"})
			// The Secret the first release wrote with the role.
			old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gitea.SecretName("unclassified"), Namespace: name, Labels: plugins.OwnershipLabels(gitea.Kind, name)},
				Data: map[string][]byte{gitea.KeyUser: []byte(role), gitea.KeyDatabase: []byte(role), gitea.KeyPassword: []byte(secretPW)}}
			if err := env.Client.Create(t.Context(), old); err != nil {
				t.Fatal(err)
			}
			before, _, _ := catalogRole(t, role)
			setLabel(t, name, "true")
			want := ""
			const conflict = "database.adopt"
			c := expectCondition(t, name, plugins.ConditionFalse, conflict)
			if !strings.HasPrefix(c.Message, plugins.ReasonConflict) {
				t.Errorf("message %q, want reason %s", c.Message, plugins.ReasonConflict)
			}
			if tc.wrong {
				if err := env.Client.Delete(t.Context(), p); err != nil {
					t.Fatal(err)
				}
				// The host never held a password for it nor made it: Revoke
				// drops nothing, and the Profile goes.
				testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
			}
			after, roleComment, _ := catalogRole(t, role)
			_, dbComment, hasDB := catalogDatabase(t, role)
			if !hasDB {
				t.Error("the database was dropped")
			}
			if after != before {
				t.Error("the role's password verifier changed")
			}
			if roleComment != want || dbComment != want {
				t.Errorf("comments: role %q, database %q; want %q", roleComment, dbComment, want)
			}
			if err := login(t, role, pw, role); err != nil {
				t.Errorf("the role's password stopped working: %v", err)
			}
		})
	}
}

func TestAdoptionIsAnOptIn(t *testing.T) {
	t.Parallel()
	start(t, opts{adopt: true})
	t.Run("a plain role and its database are taken over and marked", func(t *testing.T) {
		name := newName("gitea-adopt")
		role := gitea.Name(prefix, name)
		sqlExec(t, fmt.Sprintf("CREATE ROLE %q LOGIN PASSWORD 'theirs'", role), fmt.Sprintf("COMMENT ON ROLE %q IS 'made by hand'", role),
			"CREATE ROLE adopt_owner_"+strings.ReplaceAll(name, "-", "_"),
			fmt.Sprintf("CREATE DATABASE %q OWNER adopt_owner_%s", role, strings.ReplaceAll(name, "-", "_")))
		newProfile(t, name, map[string]string{optIn: "true"})
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		proof := profileProof(t, name)
		_, roleComment, _ := catalogRole(t, role)
		owner, dbComment, _ := catalogDatabase(t, role)
		if roleComment != proof || dbComment != proof || owner != role {
			t.Errorf("role comment %q, database comment %q, owner %s; want the proof on both and owner %s", roleComment, dbComment, owner, role)
		}
		if err := login(t, role, string(mustSecret(t, name).Data[gitea.KeyPassword]), role); err != nil {
			t.Errorf("the Secret does not open the adopted database: %v", err)
		}
	})
	t.Run("a SUPERUSER role is never adopted", func(t *testing.T) {
		name := newName("gitea-adopt-su")
		role := gitea.Name(prefix, name)
		sqlExec(t, fmt.Sprintf("CREATE ROLE %q LOGIN SUPERUSER PASSWORD 'theirs'", role))
		t.Cleanup(func() { sqlExec(t, fmt.Sprintf("DROP ROLE IF EXISTS %q", role)) })
		before, _, _ := catalogRole(t, role)
		newProfile(t, name, map[string]string{optIn: "true"})
		expectCondition(t, name, plugins.ConditionFalse, "role "+role+" exists and was not made by profilekit for profile "+name+" (it holds SUPERUSER)")
		if after, comment, _ := catalogRole(t, role); after != before || comment != "" {
			t.Errorf("the SUPERUSER role was changed: comment %q, verifier changed %v", comment, after != before)
		}
	})
}

// TestDeletionWhilePostgreSQLIsDownSaysWhy needs the reconcilers to put a
// failed Revoke of a Profile being deleted on the condition. It runs alone:
// it stops the PostgreSQL server every test shares.
func TestDeletionWhilePostgreSQLIsDownSaysWhy(t *testing.T) {
	start(t, opts{retention: plugins.RetentionDelete})
	name := newName("gitea-down-del")
	db := gitea.Name(prefix, name)
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = pg.Start()
		}
	})
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	c := expectCondition(t, name, plugins.ConditionFalse, "connect to PostgreSQL")
	t.Logf("while down: %s", c.Message)
	if !strings.HasPrefix(c.Message, gitea.SystemPostgreSQL+"Error") {
		t.Errorf("message %q, want reason %sError", c.Message, gitea.SystemPostgreSQL)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{}); err != nil {
		t.Errorf("the Profile went while its database could not be dropped: %v", err)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	finishArgoCD(t, name)
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v", err)
	})
	if _, _, ok := catalogDatabase(t, db); ok {
		t.Error("the database outlived its Profile with retention Delete")
	}
}

// TestOurRoleWithAnotherPassword: the plugin's role for the Profile no
// longer logs in with the password the host keeps (changed by someone with
// the server's rights). A plain role gets the kept password again; one
// made SUPERUSER meanwhile is a Conflict, and its password is not changed.
func TestOurRoleWithAnotherPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		attrs  string
		reset  bool
	}{
		{reason: "a plain role gets the kept password again", attrs: "NOSUPERUSER", reset: true},
		{reason: "a role made SUPERUSER keeps its password", attrs: "SUPERUSER"},
	} {
		// One at a time: the subtests' Profiles share the test's shard, and
		// each host would serve both.
		t.Run(tc.reason, func(t *testing.T) {
			start(t, opts{})
			name := newName("gitea-pw")
			p := newProfile(t, name, map[string]string{optIn: "true"})
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
			kept := string(mustSecret(t, name).Data[gitea.KeyPassword])
			role := gitea.Name(prefix, name)
			sqlExec(t, fmt.Sprintf("ALTER ROLE %q %s PASSWORD 'changed-out-of-band'", role, tc.attrs))
			t.Cleanup(func() { sqlExec(t, fmt.Sprintf("ALTER ROLE %q NOSUPERUSER", role)) })
			before, _, _ := catalogRole(t, role)
			// The server is asked again only when what the plugin wants of
			// it changed, or its record is lost: lost here, and a new
			// generation brings the pass that tries the kept password.
			testhost.LoseRecord(t, env.Client, gitea.Kind, p)
			testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
				p.Spec.ResourceQuotaSpec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
			})
			if !tc.reset {
				// The record's loss may reach the host after the new
				// generation: the Conflict comes with the pass that sees both.
				testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "role "+role+" holds SUPERUSER; its password is not changed")
				if after, _, _ := catalogRole(t, role); after != before {
					t.Error("the SUPERUSER role's password was changed")
				}
				return
			}
			testhost.Eventually(t, 30*time.Second, func() (bool, string) {
				err := login(t, role, kept, role)
				return err == nil, fmt.Sprintf("the kept password does not open the database again: %v", err)
			})
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		})
	}
}
