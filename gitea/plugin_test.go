package gitea_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/reconcilers"
)

var (
	env *testenv.Env
	pg  *testenv.Postgres
	// sharedCA is the server's CA in a file that lives as long as the run,
	// for cleanups, which may not make temporary folders.
	sharedCA string
)

const (
	hostNS    = "profilekit-system"
	condType  = "GiteaReady"
	optIn     = "gitea.example.org/unclassified"
	argocdNS  = "argocd"
	prefix    = "gitea_"
	chartRepo = "https://dl.gitea.com/charts/"
)

func TestMain(m *testing.M) {
	if slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		// A fuzz worker runs fuzz targets only, which need neither a control
		// plane nor a database; starting them per worker would leave them
		// behind at every restart.
		os.Exit(m.Run())
	}
	var err error
	pg, err = testenv.StartPostgres()
	if err != nil {
		fmt.Fprintf(os.Stderr, "postgres: %v\n", err)
		os.Exit(1)
	}
	code := 1
	func() {
		defer func() {
			if err := pg.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "postgres: %v\n", err)
			}
		}()
		e, err := testenv.Start(testenv.Options{Istio: true, ArgoCD: true})
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			return
		}
		defer func() { _ = e.Stop() }()
		env = e
		if err := hostSecrets(); err != nil {
			fmt.Fprintf(os.Stderr, "host secrets: %v\n", err)
			return
		}
		dir, err := os.MkdirTemp("", "profilekit-gitea-ca-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "CA folder: %v\n", err)
			return
		}
		defer os.RemoveAll(dir)
		sharedCA = filepath.Join(dir, "ca.crt")
		if err := os.WriteFile(sharedCA, pg.CA, 0o600); err != nil {
			fmt.Fprintf(os.Stderr, "CA file: %v\n", err)
			return
		}
		code = m.Run()
	}()
	os.Exit(code)
}

// hostSecrets writes the administrator DSN, the server's CA and another CA
// into the host's namespace, labelled so that the host's cache holds them.
func hostSecrets() error {
	ctx := context.Background()
	for _, ns := range []string{hostNS, argocdNS} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	_, _, other, err := testenv.NewTestCA("not the server's CA")
	if err != nil {
		return err
	}
	labels := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}
	for name, data := range map[string]map[string][]byte{
		"pg-admin":    {"dsn": []byte(pg.AdminDSN())},
		"pg-ca":       {"ca.crt": pg.CA},
		"pg-other-ca": {"ca.crt": other},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hostNS, Labels: labels}, Data: data}
		if err := env.Client.Create(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// sqlCounter counts the statements the plugin sends, and which of them write.
type sqlCounter struct {
	mu    sync.Mutex
	stmts []string
}

func (c *sqlCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts = append(c.stmts, d.SQL)
	return ctx
}

func (c *sqlCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *sqlCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts = nil
}

// counts returns all statements and those that write (anything but a plain
// read; terminating connections counts as a write).
func (c *sqlCounter) counts() (all int, writes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.stmts {
		if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "SELECT") || strings.Contains(s, "pg_terminate_backend") {
			writes = append(writes, s)
		}
	}
	return len(c.stmts), writes
}

type opts struct {
	ca         string
	retention  plugins.Retention
	rotateLost bool
	// adopt sets database.adopt; only written when true.
	adopt bool
	// tracer, when set, sees the plugin's SQL instead of a fresh counter.
	tracer pgx.QueryTracer
}

func hostDefaults(t *testing.T, o opts) []byte {
	t.Helper()
	if o.ca == "" {
		o.ca = "pg-ca"
	}
	cfg := map[string]any{
		"rootURL": "https://kubeflow.example.org",
		"instances": []any{map[string]any{
			"name":       "unclassified",
			"optInLabel": optIn,
			"source": map[string]any{
				"repoURL": chartRepo, "chart": "gitea", "targetRevision": "12.1.0",
				"helm": map[string]any{"valuesObject": map[string]any{"gitea": map[string]any{"config": map[string]any{"server": map[string]any{"DISABLE_SSH": true}}}}},
			},
			"database": map[string]any{
				"host":               pg.Host,
				"port":               pg.Port,
				"adminDSN":           map[string]any{"namespace": hostNS, "name": "pg-admin"},
				"ca":                 map[string]any{"namespace": hostNS, "name": o.ca},
				"namePrefix":         prefix,
				"rotateLostPassword": o.rotateLost,
			},
		}},
	}
	if o.adopt {
		cfg["instances"].([]any)[0].(map[string]any)["database"].(map[string]any)["adopt"] = true
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func start(t *testing.T, o opts) (*testhost.Host, *sqlCounter) {
	t.Helper()
	counter := &sqlCounter{}
	var tracer pgx.QueryTracer = counter
	if o.tracer != nil {
		tracer = o.tracer
	}
	def := gitea.Plugin{Tracer: tracer}.Definition()
	if o.retention == "" {
		o.retention = plugins.RetentionRetain
	}
	h := testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults(hostDefaults(t, o)),
		reconcilers.WithEnabledForAll(nil),
		reconcilers.WithResync(300 * time.Millisecond),
		reconcilers.WithRetention(o.retention),
	}})
	return h, counter
}

// admin runs fn on a superuser connection over verified TLS.
func admin(t *testing.T, fn func(*pgx.Conn)) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, "postgres", "verify-full", caFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	fn(conn)
}

func caFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, pg.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func exists(t *testing.T, query, name string) bool {
	t.Helper()
	var n int
	admin(t, func(c *pgx.Conn) {
		if err := c.QueryRow(t.Context(), query, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
	})
	return n > 0
}

func roleExists(t *testing.T, name string) bool {
	return exists(t, "SELECT count(*) FROM pg_roles WHERE rolname = $1", name)
}

func databaseExists(t *testing.T, name string) bool {
	return exists(t, "SELECT count(*) FROM pg_database WHERE datname = $1", name)
}

func application(t *testing.T, ns string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apps.ApplicationKind)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: argocdNS, Name: apps.ApplicationName(ns, "gitea-unclassified")}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

// finishArgoCD does what Argo CD does for a deleted Application once it has
// removed what it deployed: it drops the resources finalizer.
func finishArgoCD(t *testing.T, ns string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		u, ok := application(t, ns)
		if !ok {
			return true, ""
		}
		if u.GetDeletionTimestamp() == nil {
			return false, "Application not deleted yet"
		}
		if !slices.Contains(u.GetFinalizers(), apps.ResourcesFinalizer) {
			return false, fmt.Sprintf("deleted Application lacks %s: %v", apps.ResourcesFinalizer, u.GetFinalizers())
		}
		u.SetFinalizers(nil)
		if err := env.Client.Update(t.Context(), u); err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
		return false, "finalizer removed"
	})
}

func secret(t *testing.T, ns string) (*corev1.Secret, bool) {
	t.Helper()
	var s corev1.Secret
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: gitea.SecretName("unclassified")}, &s)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &s, true
}

func setLabel(t *testing.T, name, value string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[optIn] = value
	})
}

func newName(base string) string { return base + "-" + rand.String(5) }

func TestOptInProvisionsEverythingAndResyncIsQuiet(t *testing.T) {
	h, sql := start(t, opts{})
	name := newName("gitea")
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	db := gitea.Name(prefix, name)

	t.Run("role and database exist, and the role can use its database over verified TLS", func(t *testing.T) {
		s, ok := secret(t, name)
		if !ok {
			t.Fatal("no database Secret")
		}
		if got := string(s.Data[gitea.KeyUser]); got != db {
			t.Errorf("Secret user = %q, want %q", got, db)
		}
		pw := string(s.Data[gitea.KeyPassword])
		if len(pw) < 40 {
			t.Fatalf("password of %d characters", len(pw))
		}
		conn, err := pgx.Connect(t.Context(), pg.DSN(db, pw, db, "verify-full", caFile(t)))
		if err != nil {
			t.Fatalf("connect as the role: %v", err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), "CREATE TABLE repo (id int PRIMARY KEY, name text)"); err != nil {
			t.Fatalf("create table as the role: %v", err)
		}
		var enc, collate string
		if err := conn.QueryRow(t.Context(), "SELECT pg_encoding_to_char(encoding), datcollate FROM pg_database WHERE datname = current_database()").Scan(&enc, &collate); err != nil {
			t.Fatal(err)
		}
		if enc != "UTF8" || collate != "C" {
			t.Errorf("database encoding %s, collation %s; want UTF8 and C", enc, collate)
		}
	})

	t.Run("the Application deploys the chart into the Profile's namespace with automated sync", func(t *testing.T) {
		u, ok := application(t, name)
		if !ok {
			t.Fatal("no Application")
		}
		spec := u.Object["spec"].(map[string]any)
		want := map[string]any{
			"project":     "default",
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		}
		got := map[string]any{"project": spec["project"], "destination": spec["destination"], "syncPolicy": spec["syncPolicy"]}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Application spec (-want +got):\n%s", d)
		}
		src := spec["source"].(map[string]any)
		if src["repoURL"] != chartRepo || src["chart"] != "gitea" || src["targetRevision"] != "12.1.0" {
			t.Errorf("source = %v", src)
		}
		values := src["helm"].(map[string]any)["valuesObject"].(map[string]any)["gitea"].(map[string]any)
		cfg := values["config"].(map[string]any)
		if got := cfg["server"].(map[string]any)["ROOT_URL"]; got != "https://kubeflow.example.org/gitea-unclassified/"+name+"/" {
			t.Errorf("ROOT_URL = %v", got)
		}
		if got := cfg["server"].(map[string]any)["DISABLE_SSH"]; got != true {
			t.Errorf("the host's own value DISABLE_SSH = %v, want it kept", got)
		}
		if got := cfg["database"].(map[string]any)["NAME"]; got != db {
			t.Errorf("database NAME = %v", got)
		}
		if got := values["admin"].(map[string]any)["password"]; got != "" {
			t.Errorf("admin password = %v, want none", got)
		}
		raw, _ := json.Marshal(u.Object)
		if strings.Contains(string(raw), string(mustSecret(t, name).Data[gitea.KeyPassword])) {
			t.Error("the Application holds the database password")
		}
		if !slices.Contains(u.GetFinalizers(), apps.ResourcesFinalizer) {
			t.Errorf("finalizers %v lack %s", u.GetFinalizers(), apps.ResourcesFinalizer)
		}
	})

	t.Run("the route redirects the dashboard link and serves the namespace's prefix, never by Referer", func(t *testing.T) {
		var vs istionetworkingv1.VirtualService
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, &vs); err != nil {
			t.Fatal(err)
		}
		if len(vs.Spec.Http) != 2 {
			t.Fatalf("%d routes, want redirect and route", len(vs.Spec.Http))
		}
		redirect, route := vs.Spec.Http[0], vs.Spec.Http[1]
		if m := redirect.Match[0]; m.Uri.GetExact() != "/gitea-unclassified/" || m.QueryParams["ns"].GetExact() != name || redirect.Redirect.GetUri() != "/gitea-unclassified/"+name+"/" {
			t.Errorf("redirect = %v", redirect)
		}
		if route.Match[0].Uri.GetPrefix() != "/gitea-unclassified/"+name+"/" || route.Route[0].Destination.Host != "gitea-http."+name+".svc.cluster.local" || route.Route[0].Destination.Port.Number != 3000 {
			t.Errorf("route = %v", route)
		}
		for _, r := range vs.Spec.Http {
			for _, m := range r.Match {
				if len(m.Headers) > 0 {
					t.Errorf("route %s matches headers %v", r.Name, m.Headers)
				}
			}
		}
	})

	t.Run("the NetworkPolicy admits the ingress gateway to the Gitea pods only", func(t *testing.T) {
		var np networkingv1.NetworkPolicy
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, &np); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[string]string{"app.kubernetes.io/name": "gitea"}, np.Spec.PodSelector.MatchLabels); d != "" {
			t.Errorf("pod selector (-want +got):\n%s", d)
		}
		from := np.Spec.Ingress[0].From
		if len(np.Spec.Ingress) != 1 || len(from) != 1 || from[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "istio-system" || from[0].PodSelector.MatchLabels["istio"] != "ingressgateway" {
			t.Errorf("ingress = %v", np.Spec.Ingress)
		}
	})

	t.Run("the external database host has a ServiceEntry", func(t *testing.T) {
		var se istionetworkingv1.ServiceEntry
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified-postgres"}, &se); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(se.Spec.Hosts, []string{pg.Host}) || se.Spec.Ports[0].Number != uint32(pg.Port) {
			t.Errorf("ServiceEntry hosts %v ports %v", se.Spec.Hosts, se.Spec.Ports)
		}
	})

	t.Run("a second pass sends no mutating request and no SQL that writes", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, gitea.Kind); len(got) != 0 {
			t.Errorf("resync sent %d mutating requests: %v", len(got), got)
		}
		sql.reset()
		before := testhost.Reconciles(t, gitea.Kind)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			n := testhost.Reconciles(t, gitea.Kind) - before
			return n >= 3, fmt.Sprintf("%v passes", n)
		})
		all, writes := sql.counts()
		t.Logf("%v passes after the first: %d SQL statements, %d that write", testhost.Reconciles(t, gitea.Kind)-before, all, len(writes))
		if len(writes) != 0 {
			t.Errorf("resync sent SQL that writes: %v", writes)
		}
		if all != 0 {
			t.Errorf("resync sent %d SQL statements; the outside-state record should have spared them all", all)
		}
	})

	t.Run("opting out deletes the Application with Argo CD's finalizer and keeps the database", func(t *testing.T) {
		pw := string(mustSecret(t, name).Data[gitea.KeyPassword])
		setLabel(t, name, "false")
		finishArgoCD(t, name)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var vs istionetworkingv1.VirtualService
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, &vs)
			return apierrors.IsNotFound(err), fmt.Sprintf("route: %v", err)
		})
		if !roleExists(t, db) || !databaseExists(t, db) {
			t.Error("opting out dropped the role or the database")
		}
		setLabel(t, name, "true")
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, ok := application(t, name)
			return ok, "no Application after opting in again"
		})
		if got := string(mustSecret(t, name).Data[gitea.KeyPassword]); got != pw {
			t.Error("opting in again changed the password")
		}
	})
}

func mustSecret(t *testing.T, ns string) *corev1.Secret {
	t.Helper()
	s, ok := secret(t, ns)
	if !ok {
		t.Fatalf("no Secret in %s", ns)
	}
	return s
}

func TestRetentionDeleteDropsDatabaseAndRole(t *testing.T) {
	start(t, opts{retention: plugins.RetentionDelete})
	name := newName("gitea-del")
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	db := gitea.Name(prefix, name)
	// A connection of the role's own stays open; dropping must end it.
	conn, err := pgx.Connect(t.Context(), pg.DSN(db, string(mustSecret(t, name).Data[gitea.KeyPassword]), db, "verify-full", caFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	setLabel(t, name, "false")
	finishArgoCD(t, name)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return !databaseExists(t, db) && !roleExists(t, db), "database or role still there"
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		_, ok := secret(t, name)
		return !ok, "Secret still there"
	})
}

func TestLongNamespacesGetDistinctRoles(t *testing.T) {
	start(t, opts{})
	base := strings.Repeat("a", 55) + rand.String(5)
	first, second := base+"one", base+"two"
	if len(first) != 63 {
		t.Fatalf("namespace of %d characters", len(first))
	}
	for _, n := range []string{first, second} {
		testhost.NewProfile(t, env.Client, n, map[string]string{optIn: "true"})
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
			if _, err := srv.Ensure(t.Context(), spec, pw, false); err != nil {
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
			if _, err := srv.Drop(t.Context(), spec, pw); err != nil {
				t.Fatal(err)
			}
			if roleExists(t, name) {
				t.Errorf("%q: not dropped", name)
			}
		}
	})
}

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
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
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
	start(t, opts{ca: "pg-other-ca"})
	name := newName("gitea-ca")
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
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
	start(t, opts{})
	name := newName("gitea-bad")
	raw, _ := json.Marshal(map[string]any{"enable": []string{"secret"}})
	testhost.NewProfile(t, env.Client, name, nil, kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: gitea.Kind}, Spec: &runtime.RawExtension{Raw: raw}})
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `enable[0] "secret": no such instance`)
	if !strings.HasPrefix(c.Message, plugins.ReasonInvalidSpec) {
		t.Errorf("message %q, want reason %s", c.Message, plugins.ReasonInvalidSpec)
	}
}

func TestProfileDeletionLeavesNothingBehind(t *testing.T) {
	start(t, opts{})
	name := newName("gitea-gone")
	p := testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	finishArgoCD(t, name)
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v", err)
	})
	left := []string{}
	if _, ok := application(t, name); ok {
		left = append(left, "Application")
	}
	if _, ok := secret(t, name); ok {
		left = append(left, "Secret")
	}
	for _, obj := range []client.Object{&istionetworkingv1.VirtualService{}, &networkingv1.NetworkPolicy{}} {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, obj)
		if !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("%T", obj))
		}
	}
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if db := gitea.Name(prefix, name); !databaseExists(t, db) {
		t.Error("retention Retain, yet the database was dropped")
	}
}

func TestLostSecretIsReportedNotRotated(t *testing.T) {
	start(t, opts{})
	name := newName("gitea-lost")
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if err := env.Client.Delete(t.Context(), mustSecret(t, name)); err != nil {
		t.Fatal(err)
	}
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, gitea.ReasonPasswordLost)
	t.Logf("after the Secret was deleted: %s", c.Message)
	if _, ok := secret(t, name); ok {
		t.Error("a Secret with a new password was written")
	}
	if _, ok := application(t, name); !ok {
		t.Error("the Application was deleted over a lost Secret")
	}
}

func TestLostSecretRotatedWhenAllowed(t *testing.T) {
	start(t, opts{rotateLost: true})
	name := newName("gitea-rot")
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	old := string(mustSecret(t, name).Data[gitea.KeyPassword])
	// A pass that read the Secret just before the delete may write it back
	// with the password the role still has: the Secret is then restored, not
	// lost, which is right too. Delete it again until a pass finds it gone.
	var pw string
	for attempt := 1; ; attempt++ {
		if err := env.Client.Delete(t.Context(), mustSecret(t, name)); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			s, ok := secret(t, name)
			if !ok {
				return false, "no Secret yet"
			}
			pw = string(s.Data[gitea.KeyPassword])
			return true, ""
		})
		if pw != old {
			break
		}
		if attempt == 5 {
			t.Fatalf("the Secret came back with the same password after %d deletes: never rotated", attempt)
		}
		t.Logf("delete %d: the Secret was written back with the same password by a pass that read it before the delete", attempt)
	}
	db := gitea.Name(prefix, name)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		conn, err := pgx.Connect(t.Context(), pg.DSN(db, pw, db, "verify-full", caFile(t)))
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close(context.Background())
		return true, ""
	})
	if conn, err := pgx.Connect(t.Context(), pg.DSN(db, old, db, "verify-full", caFile(t))); err == nil {
		_ = conn.Close(context.Background())
		t.Error("the old password still works")
	}
}
