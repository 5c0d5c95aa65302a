package gitea_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// harnessInstances are the scenario's two instances, on one server, with
// prefixes of which neither starts the other.
var harnessInstances = []struct{ name, prefix string }{
	{"unclassified", prefix},
	{"protected-b", "giteapb_"},
}

// giteaScenario is the plugin with two instances on the test's PostgreSQL:
// a Profile runs the unclassified Gitea, moves to the protected-b one (a
// second role and database, its Secret, banner and objects are made; the
// first instance's Application, route, policy and ServiceEntry deleted),
// lets go of the plugin, runs the first again, and is deleted. With
// retention Retain the databases and roles stay; with Delete the move
// drops the first instance's and letting go the second's. The database
// Secrets are compared without the password made for each run; Observe
// shows instead whether it logs in as the role to its database, each
// role (its rights, membership and proof) and each database (owner,
// encoding, collation, grants and proof).
func giteaScenario(t *testing.T, retention plugins.Retention) plugintest.Scenario {
	var instances []any
	for _, in := range harnessInstances {
		instances = append(instances, map[string]any{
			"name":       in.name,
			"optInLabel": "gitea.example.org/" + in.name,
			"source":     map[string]any{"repoURL": chartRepo, "chart": "gitea", "targetRevision": "12.1.0"},
			"database": map[string]any{
				"host":       pg.Host,
				"port":       pg.Port,
				"adminDSN":   map[string]any{"namespace": hostNS, "name": "pg-admin"},
				"ca":         map[string]any{"namespace": hostNS, "name": "pg-ca"},
				"namePrefix": in.prefix,
			},
		})
	}
	instances[1].(map[string]any)["banner"] = map[string]any{"text": "PROTECTED B", "background": "#ffcc00"}
	defaults, err := json.Marshal(map[string]any{"rootURL": "https://kubeflow.example.org", "instances": instances})
	if err != nil {
		t.Fatal(err)
	}
	retained := []string{"Secret ", "ConfigMap "} // in the namespace, which goes with the Profile
	var remembered []string
	if retention != plugins.RetentionDelete {
		retained = append(retained, "role ", "database ")
		// The retained database stays the Profile's, so that it gets it
		// back when the plugin is added again.
		remembered = []string{"database/"}
	}
	return plugintest.Scenario{
		Def:       gitea.Definition(),
		Defaults:  defaults,
		Retention: retention,
		Steps: []plugintest.Step{
			{Name: "run the unclassified Gitea", Spec: map[string]any{"enable": []string{"unclassified"}}},
			{Name: "move to protected-b", Spec: map[string]any{"enable": []string{"protected-b"}}},
			{Name: "remove", Remove: true},
			{Name: "add again", Spec: map[string]any{"enable": []string{"unclassified"}}},
			{Name: "delete the Profile", Delete: true},
		},
		// The passwords the host keeps, beside the adminDSN Secret, out of
		// the Profile's state (their role is outside state).
		Touches: []string{"Secret " + hostNS + "/gitea-unclassified-db-<uid>", "Secret " + hostNS + "/gitea-protected-b-db-<uid>"},
		Normalize: func(u *unstructured.Unstructured) {
			// A password is made for each run: Observe shows it logs in.
			if u.GetKind() == "Secret" {
				unstructured.RemoveNestedField(u.Object, "data", gitea.KeyPassword)
				unstructured.RemoveNestedField(u.Object, "metadata", "annotations", plugins.AnnotationAppliedHash)
			}
		},
		Retained:   retained,
		Remembered: remembered,
		Between:    finishArgoCDDeletions,
		Observe:    observeGitea,
		Equivalent: map[string]string{
			plugintest.CallTwice.Name: "every PostgreSQL call is idempotent: Inspect and LogsIn only read; Ensure reads the catalog and makes only the role, " +
				"database and grants that are missing or not as wanted, so made again at once it finds them made and changes nothing; Drop drops only what is " +
				"there with the Profile's proof, so made again it finds nothing. The second call costs reads and changes nothing PostgreSQL, the record or the " +
				"harness can tell (the lost plans, which make each call again on the next pass, pass as well)",
		},
	}
}

// finishArgoCDDeletions does what Argo CD does for the namespace's deleted
// Applications once it has removed what they deployed: it drops their
// resources finalizer.
func finishArgoCDDeletions(ctx context.Context, c client.Client, namespace string) error {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(apps.ApplicationKind.GroupVersion().WithKind("ApplicationList"))
	if err := c.List(ctx, &list, client.InNamespace(argocdNS)); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetDeletionTimestamp() == nil || !strings.HasPrefix(u.GetName(), namespace+".") {
			continue
		}
		u.SetFinalizers(nil)
		errs = append(errs, client.IgnoreNotFound(c.Update(ctx, u)))
	}
	return errors.Join(errs...)
}

// observeGitea returns what the server holds for the Profile's roles and
// databases of both instances.
func observeGitea(ctx context.Context, namespace string) (map[string]string, error) {
	conn, err := pgx.Connect(ctx, pg.DSN(pg.User, pg.Password, "postgres", "verify-full", sharedCA))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	out := map[string]string{}
	for _, in := range harnessInstances {
		name := gitea.Name(in.prefix, namespace)
		var role struct {
			Login, Super, CreateDB, CreateRole bool
			MemberOf                           int
			Comment                            *string
		}
		err := conn.QueryRow(ctx, `SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole,
	(SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid), shobj_description(oid, 'pg_authid')
FROM pg_roles r WHERE rolname = $1`, name).Scan(&role.Login, &role.Super, &role.CreateDB, &role.CreateRole, &role.MemberOf, &role.Comment)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("read role %s: %w", name, err)
		default:
			b, _ := json.Marshal(role)
			out["role "+name] = string(b)
		}
		var db struct {
			Owner, Encoding, Collate, CType string
			ACL, Comment                    *string
		}
		err = conn.QueryRow(ctx, `SELECT pg_get_userbyid(datdba), pg_encoding_to_char(encoding), datcollate, datctype, datacl::text,
	shobj_description(oid, 'pg_database')
FROM pg_database WHERE datname = $1`, name).Scan(&db.Owner, &db.Encoding, &db.Collate, &db.CType, &db.ACL, &db.Comment)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("read database %s: %w", name, err)
		default:
			b, _ := json.Marshal(db)
			out["database "+name] = string(b)
		}
		if err := observeSecret(ctx, namespace, in.name, name, out); err != nil {
			return nil, err
		}
		var banner corev1.ConfigMap
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: gitea.BannerName(in.name)}, &banner)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			out["ConfigMap "+banner.Name] = fmt.Sprint(banner.Labels, banner.Data)
		}
	}
	return out, nil
}

// observeSecret adds the instance's database Secret to out: its keys
// but the password, and whether the password logs in as role to its
// database.
func observeSecret(ctx context.Context, namespace, instance, role string, out map[string]string) error {
	var s corev1.Secret
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: gitea.SecretName(instance)}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	key := "Secret " + s.Name
	pw := string(s.Data[gitea.KeyPassword])
	for k, v := range s.Data {
		if k != gitea.KeyPassword {
			out[key+" "+k] = string(v)
		}
	}
	out[key+" labels"] = fmt.Sprint(s.Labels)
	out[key+" login"] = "refused"
	if conn, err := pgx.Connect(ctx, pg.DSN(role, pw, role, "verify-full", sharedCA)); err == nil {
		out[key+" login"] = "logs in"
		_ = conn.Close(ctx)
	}
	return nil
}

// TestGiteaSurvivesEveryPerturbation runs the scenario under every
// pattern, with retention Retain: the host stopping after each write, a
// stale cache at each write, and each PostgreSQL call refused or its
// answer lost.
func TestGiteaSurvivesEveryPerturbation(t *testing.T) {
	surviveEveryPerturbation(t, plugins.RetentionRetain)
}

// TestGiteaRetentionDeleteSurvivesEveryPerturbation runs the scenario
// under every pattern with retention Delete, where moving to protected-b
// and letting go drop the databases and roles the Profile no longer runs.
func TestGiteaRetentionDeleteSurvivesEveryPerturbation(t *testing.T) {
	surviveEveryPerturbation(t, plugins.RetentionDelete)
}

// surviveEveryPerturbation runs the scenario with retention alongside the
// other retention's, and its patterns side by side: each plan has a Profile
// of its own, with its own roles, databases and Secrets, so plans share
// nothing but the servers, and most of a plan is waiting on them.
func surviveEveryPerturbation(t *testing.T, retention plugins.Retention) {
	t.Parallel()
	plugintest.Harness{Client: env.Client, Parallel: true}.Survives(t, func(t *testing.T) plugintest.Scenario { return giteaScenario(t, retention) }, plugintest.EveryPattern...)
}
