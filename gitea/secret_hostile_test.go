package gitea_test

// Hostile tests of the database Secret in the Profile's namespace, which a
// tenant with Kubeflow's rights there (kubeflow-edit: secrets) can write:
// it is the plugin's output only, never its input nor a proof.

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// TestTenantSecretEditIsPutBack: the tenant overwrites the password in its
// database Secret. Within seconds the Secret holds the host's password
// again, the host ran no SQL for the edit (the Secret is not an input of
// the database's desired state), the Secret's password still opens the
// database, and the condition stays True.
func TestTenantSecretEditIsPutBack(t *testing.T) {
	t.Parallel()
	_, sql := start(t, opts{})
	name := newName("gitea-edit")
	db := gitea.Name(prefix, name)
	t.Cleanup(func() {
		sqlExec(t, fmt.Sprintf("DROP DATABASE IF EXISTS %q WITH (FORCE)", db), fmt.Sprintf("DROP ROLE IF EXISTS %q", db))
	})
	newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	hosts := string(mustSecret(t, name).Data[gitea.KeyPassword])
	if err := login(t, db, hosts, db); err != nil {
		t.Fatalf("the Secret's password does not open the database: %v", err)
	}
	verifier, _, _ := catalogRole(t, db)

	sql.reset()
	tenant := testhost.Tenant(t, env, name)
	for i, edit := range []string{rand.String(30), ""} {
		var s corev1.Secret
		if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: name, Name: gitea.SecretName("unclassified")}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[gitea.KeyPassword] = []byte(edit)
		if err := tenant.Update(t.Context(), &s); err != nil {
			t.Fatalf("the tenant edits the Secret: %v", err)
		}
		// The edited Secret is deleted and made again whole (gitea keeps
		// it Exclusive), so for a moment there may be none.
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			s, ok := secret(t, name)
			return ok && string(s.Data[gitea.KeyPassword]) == hosts, fmt.Sprintf("edit %d: the Secret is gone or holds the tenant's password", i)
		})
	}
	// The tenant's deleting it is put back the same way.
	if err := tenant.Delete(t.Context(), mustSecret(t, name)); err != nil {
		t.Fatalf("the tenant deletes the Secret: %v", err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		s, ok := secret(t, name)
		return ok && string(s.Data[gitea.KeyPassword]) == hosts, "the Secret is not back with the host's password"
	})
	if all, writes := sql.counts(); all > 0 {
		t.Errorf("the host ran %d SQL statements for the tenant's edits (writes %q)", all, writes)
	}
	if after, _, _ := catalogRole(t, db); after != verifier {
		t.Error("the role's password changed")
	}
	if err := login(t, db, string(mustSecret(t, name).Data[gitea.KeyPassword]), db); err != nil {
		t.Errorf("the Secret's password does not open the database: %v", err)
	}
	if c := testhost.CurrentCondition(t, env.Client, name, condType); c.Status != plugins.ConditionTrue {
		t.Errorf("%s=%s %s", condType, c.Status, c.Message)
	}
}

// TestTenantPasswordIsNoProof: a role and database as the first release
// made them (no comment), with another team's data, and a tenant that
// writes the database Secret with our labels and the role's right
// password (a former contributor could have read it). A login with a
// password the tenant wrote proves nothing: the Profile is a Conflict that
// names adoption, and nothing in PostgreSQL is altered.
func TestTenantPasswordIsNoProof(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-noproof")
	db := gitea.Name(prefix, name)
	old := rand.String(30)
	sqlExec(t, fmt.Sprintf("CREATE ROLE %q LOGIN PASSWORD '%s'", db, old), fmt.Sprintf("CREATE DATABASE %q OWNER %q", db, db))
	t.Cleanup(func() {
		sqlExec(t, fmt.Sprintf("DROP DATABASE IF EXISTS %q WITH (FORCE)", db), fmt.Sprintf("DROP ROLE IF EXISTS %q", db))
	})
	putTeamData(t, db)
	verifier, _, _ := catalogRole(t, db)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	tenantWritesSecret(t, name, db, old)
	testhost.ProfileOf(t, env.Client, name, testhost.Alice)
	setLabel(t, name, "true")

	cond := expectCondition(t, name, plugins.ConditionFalse, "database.adopt")
	t.Logf("%s=%s %s", condType, cond.Status, cond.Message)
	reverify(t, name)
	time.Sleep(2 * time.Second)
	after, roleComment, _ := catalogRole(t, db)
	owner, dbComment, _ := catalogDatabase(t, db)
	if after != verifier || roleComment != "" || dbComment != "" || owner != db {
		t.Errorf("the first release's role or database changed: password changed %v, role comment %q, database comment %q, owner %s",
			after != verifier, roleComment, dbComment, owner)
	}
	if got := teamData(t, db); got != "alice's team was here" {
		t.Errorf("the team's data is %q", got)
	}
}
