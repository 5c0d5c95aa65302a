package gitea_test

// This file holds what the plugin's tests share: the control plane and
// database started once, the host each test starts, and the helpers that
// read the database and the cluster.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
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
	// The harness's plans wait on the API server, PostgreSQL and Argo CD's
	// finalizers far more than they compute.
	testenv.Parallel(8)
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
	ctx := context.Background() //nolint:forbidigo // no *testing.T in reach
	// The host's namespace is there already: testenv makes it.
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argocdNS}}); err != nil {
		return err
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
	// enabledBy, when set, are the labels that apply the plugin to a
	// Profile; else it applies to every Profile.
	enabledBy map[string]string
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
	var enabled labels.Selector
	if o.enabledBy != nil {
		enabled = labels.SelectorFromSet(o.enabledBy)
	}
	h := testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults(hostDefaults(t, o)),
		reconcilers.WithEnabledForAll(enabled),
		reconcilers.WithResync(300 * time.Millisecond),
		reconcilers.WithRetention(o.retention),
		reconcilers.WithShard(labels.SelectorFromSet(shardOf(t))),
	}})
	return h, counter
}

// shards holds each test's shard label, by its top-level name.
var shards sync.Map

// shardOf is the label of the test's Profiles: only the test's hosts
// reconcile them, so that tests run side by side.
func shardOf(t *testing.T) map[string]string {
	top, _, _ := strings.Cut(t.Name(), "/")
	s, _ := shards.LoadOrStore(top, map[string]string{"gitea-test": strings.ToLower(rand.String(6))})
	return s.(map[string]string)
}

// newProfile makes a Profile with labels l in the test's shard.
func newProfile(t *testing.T, name string, l map[string]string, ps ...kubeflowv1.Plugin) *kubeflowv1.Profile {
	t.Helper()
	all := maps.Clone(shardOf(t))
	maps.Copy(all, l)
	return testhost.NewProfile(t, env.Client, name, all, ps...)
}

// admin runs fn on a superuser connection over verified TLS.
func admin(t *testing.T, fn func(*pgx.Conn)) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.DSN(pg.User, pg.Password, "postgres", "verify-full", caFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background()) //nolint:forbidigo // no *testing.T in reach
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
		maps.Copy(p.Labels, shardOf(t))
	})
}

func newName(base string) string { return base + "-" + rand.String(5) }

func mustSecret(t *testing.T, ns string) *corev1.Secret {
	t.Helper()
	s, ok := secret(t, ns)
	if !ok {
		t.Fatalf("no Secret in %s", ns)
	}
	return s
}

// heldKey is where the host keeps the password of the instance
// "unclassified" for p, read again for its UID.
func heldKey(t *testing.T, p *kubeflowv1.Profile) client.ObjectKey {
	t.Helper()
	var live kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), &live); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKey{Namespace: hostNS, Name: gitea.HeldSecretName("unclassified", &live)}
}
