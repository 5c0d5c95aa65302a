package gitea_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
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
// and lets go of the plugin. With retention Retain the databases, roles
// and Secrets stay; with Delete the move drops the first instance's and
// letting go the second's (the harness passes Retain to every pass;
// hostApplier gives the host's retention instead).
//
// Two of the plugin's kinds cannot be compared by the harness as it
// compares objects: a database Secret holds a password generated in each
// run and the Profile's name base64-encoded, and the outside-state record
// is a ConfigMap with the plugin's labels, holding a digest of that
// password and the time of the call. The harness therefore sees the
// plugin without Secrets and ConfigMaps among the kinds it compares
// (hostApplier writes them as a host would), and Observe reports the
// Secrets and the banner instead: each Secret decoded, without its
// password but with whether it logs in as the role to its database. For
// both instances Observe reads too the role (its rights, membership and
// proof) and the database (owner, encoding, collation, grants and proof).
func giteaScenario(t *testing.T, retention plugins.Retention) plugintest.Scenario {
	var instances []any
	var touches []string
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
		touches = append(touches, "Secret <profile>/"+gitea.SecretName(in.name), "ConfigMap <profile>/"+gitea.BannerName(in.name))
	}
	instances[1].(map[string]any)["banner"] = map[string]any{"text": "PROTECTED B", "background": "#ffcc00"}
	defaults, err := json.Marshal(map[string]any{"rootURL": "https://kubeflow.example.org", "instances": instances})
	if err != nil {
		t.Fatal(err)
	}
	def := gitea.Definition()
	compared := def
	compared.Plugin = hostApplier{Plugin: def.Plugin, def: def, retention: retention}
	compared.Owns = slices.DeleteFunc(slices.Clone(def.Owns), func(k schema.GroupVersionKind) bool {
		return k == corev1.SchemeGroupVersion.WithKind("Secret") || k == corev1.SchemeGroupVersion.WithKind("ConfigMap")
	})
	return plugintest.Scenario{
		Def:      compared,
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "run the unclassified Gitea", Spec: map[string]any{"enable": []string{"unclassified"}}},
			{Name: "move to protected-b", Spec: map[string]any{"enable": []string{"protected-b"}}},
			{Name: "remove", Remove: true},
		},
		Observe: observeGitea,
		Touches: touches,
	}
}

// hostApplier is the plugin with the Applier a host gives it, for every
// kind the plugin owns, while the harness compares fewer. The Applier
// writes through the pass's client, so the harness records and perturbs
// its writes as any other.
type hostApplier struct {
	plugins.Plugin
	def       plugins.Definition
	retention plugins.Retention
}

func (p hostApplier) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return p.Plugin.Apply(ctx, p.host(req))
}

func (p hostApplier) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return p.Plugin.Revoke(ctx, p.host(req))
}

// host gives req the Applier of every kind the plugin owns and the host's
// retention. Secrets are read from the API server: the harness's stale
// cache holds only the kinds it compares, and a pass that finds neither
// the administrator's DSN nor the database Secrets would stop before it
// reaches PostgreSQL.
func (p hostApplier) host(req plugins.Request) plugins.Request {
	req.Client = secretsLive{Cluster: req.Client, live: req.LiveReader()}
	req.Objects = apply.New(req.Client, p.def.Kind(), req.Profile, p.def.Owns, append(apply.OptionsFor(p.def), apply.WithLiveReader(req.Live))...)
	req.Retention = p.retention
	return req
}

// secretsLive reads Secrets through live, and everything else through its
// Cluster.
type secretsLive struct {
	plugins.Cluster
	live client.Reader
}

func (c secretsLive) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if isSecret(obj) {
		return c.live.Get(ctx, key, obj, opts...)
	}
	return c.Cluster.Get(ctx, key, obj, opts...)
}

func (c secretsLive) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if isSecret(list) {
		return c.live.List(ctx, list, opts...)
	}
	return c.Cluster.List(ctx, list, opts...)
}

// isSecret says whether obj is a Secret or a list of them, typed or not.
func isSecret(obj runtime.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, env.Client.Scheme())
	return err == nil && gvk.Group == "" && strings.TrimSuffix(gvk.Kind, "List") == "Secret"
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

func surviveEveryPerturbation(t *testing.T, retention plugins.Retention) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		pattern string
		run     func(plugintest.T, plugintest.Scenario) plugintest.Plans
	}{
		{"crash", h.CrashAfterEveryWrite},
		{"stale", h.StaleAtEveryWrite},
		{"refused", h.FailEveryOutsideCall},
		{"lost", h.LoseEveryOutsideAnswer},
	} {
		t.Run(tt.pattern, func(t *testing.T) {
			plans := tt.run(t, giteaScenario(t, retention))
			t.Logf("%s: %d %s plans, %d failed", gitea.Kind, plans.Run, tt.pattern, plans.Failed)
			if plans.Run+plans.Skipped == 0 {
				t.Error("no plan ran")
			}
		})
	}
}
