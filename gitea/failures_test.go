package gitea_test

// This file holds the tests of names at the edges and of failures: long
// namespaces, crafted names, a database that is down, a wrong CA and an
// invalid spec.

import (
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

func TestLongNamespacesGetDistinctRoles(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	base := strings.Repeat("a", 55) + rand.String(5)
	first, second := base+"one", base+"two"
	if len(first) != 63 {
		t.Fatalf("namespace of %d characters", len(first))
	}
	for _, n := range []string{first, second} {
		newProfile(t, n, map[string]string{optIn: "true"})
	}
	for _, n := range []string{first, second} {
		testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
	}
	a, b := gitea.Name(prefix, first), gitea.Name(prefix, second)
	t.Logf("roles %s and %s", a, b)
	if a == b || len(a) > 63 || len(b) > 63 {
		t.Fatalf("names %q and %q", a, b)
	}
	for _, n := range []string{a, b} {
		if !roleExists(t, n) || !databaseExists(t, n) {
			t.Errorf("role or database %s missing", n)
		}
	}
}

func TestCraftedNamesCannotInjectSQL(t *testing.T) {
	t.Parallel()
	t.Run("the API refuses a Profile whose name holds a quote", func(t *testing.T) {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: `x";drop-role-postgres`}}
		if err := env.Client.Create(t.Context(), p); !apierrors.IsInvalid(err) {
			t.Errorf("create = %v, want Invalid", err)
		}
	})
	t.Run("names with quotes and dashes are quoted identifiers, nothing more", func(t *testing.T) {
		srv := gitea.Server{Connector: gitea.Connector{DSN: pg.AdminDSN(), SSLMode: gitea.SSLVerifyFull, CA: pg.CA}}
		for _, name := range []string{`x"; DROP ROLE postgres; --`, `a'b-c); DROP DATABASE postgres; --`} {
			spec := gitea.DatabaseSpec{Role: name, Database: name, Encoding: "UTF8", LCCollate: "C", LCCtype: "C", Template: "template0",
				Profile: "p", Proof: name + "'); DROP ROLE postgres; --"}
			pw, _ := gitea.NewPassword()
			if _, err := srv.Ensure(t.Context(), spec, pw); err != nil {
				t.Fatalf("%q: %v", name, err)
			}
			if !roleExists(t, name) || !databaseExists(t, name) {
				t.Errorf("%q: role or database not made under that exact name", name)
			}
			if !roleExists(t, "postgres") || !databaseExists(t, "postgres") {
				t.Fatalf("%q: the injected statement ran", name)
			}
			if _, comment, _ := catalogRole(t, name); comment != spec.Proof {
				t.Errorf("%q: role comment %q, want the proof whole", name, comment)
			}
			if _, err := srv.Drop(t.Context(), spec); err != nil {
				t.Fatal(err)
			}
			if roleExists(t, name) {
				t.Errorf("%q: not dropped", name)
			}
		}
	})
}

// TestDatabaseDownIsRetriedThenRecovers runs alone: it stops the PostgreSQL
// server every test shares.
func TestDatabaseDownIsRetriedThenRecovers(t *testing.T) {
	start(t, opts{})
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = pg.Start()
		}
	})
	name := newName("gitea-down")
	newProfile(t, name, map[string]string{optIn: "true"})
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "connect to PostgreSQL")
	t.Logf("while down: %s", c.Message)
	if _, ok := application(t, name); ok {
		t.Error("an Application was written while the database was down")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if db := gitea.Name(prefix, name); !databaseExists(t, db) {
		t.Error("no database after recovery")
	}
}

func TestWrongCAFailsClosed(t *testing.T) {
	t.Parallel()
	start(t, opts{ca: "pg-other-ca"})
	name := newName("gitea-ca")
	newProfile(t, name, map[string]string{optIn: "true"})
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "certificate")
	t.Logf("with another CA: %s", c.Message)
	if roleExists(t, gitea.Name(prefix, name)) {
		t.Error("a role was made over an unverified connection")
	}
	if strings.Contains(c.Message, pg.Password) {
		t.Error("the condition holds the administrator's password")
	}
}

func TestInvalidSpecIsTerminal(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-bad")
	raw, _ := json.Marshal(map[string]any{"enable": []string{"secret"}})
	newProfile(t, name, nil, kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: gitea.Kind}, Spec: &runtime.RawExtension{Raw: raw}})
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `enable[0] "secret": no such instance`)
	if !strings.HasPrefix(c.Message, plugins.ReasonInvalidSpec) {
		t.Errorf("message %q, want reason %s", c.Message, plugins.ReasonInvalidSpec)
	}
}
