package page_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

// viewRole is the ClusterRole the tests bind: what the page's
// SubjectAccessReview asks, to list pods (kubeflow-view has it).
const viewRole = "page-test-view"

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{
		CRDPaths: []string{filepath.Join(testenv.RepoRoot(), "plugins", "notebook", "testdata", "poddefault-crd.yaml")},
		ArgoCD:   true,
	})
}

// host starts a manager with the host's cache settings and no controller,
// and returns the page's handler on it, reading the cache, with the kinds
// the host caches whole: WholeKinds and whole.
func host(t *testing.T, whole ...schema.GroupVersionKind) http.Handler {
	t.Helper()
	return hostWith(t, page.Options{}, whole...)
}

// hostWith is host with the page's options opts, whose user headers,
// Whole and Members it sets.
func hostWith(t *testing.T, opts page.Options, whole ...schema.GroupVersionKind) http.Handler {
	t.Helper()
	s, err := server.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme: s, Cache: reconcilers.CacheOptions(nil), Client: reconcilers.ClientOptions(),
		MapperProvider: reconcilers.NewRESTMapper, Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	members, err := page.NewMembers(mgr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // the manager serves the cleanups, which run after t.Context is canceled
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	opts.UserIDHeader, opts.UserIDPrefix, opts.GroupsHeader = "kubeflow-userid", "accounts.example.org:", "kubeflow-groups"
	opts.Whole, opts.Members = append(slices.Clone(page.WholeKinds), whole...), members
	return page.New(mgr.GetClient(), s, page.NewAccess(env.Client, 30*time.Second, 100), opts)
}

// get asks h for target as user (groups comma-separated) and returns the
// status and body.
func get(t *testing.T, h http.Handler, target, user, groups string) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if user != "" {
		req.Header.Set("kubeflow-userid", "accounts.example.org:"+user)
	}
	if groups != "" {
		req.Header.Set("kubeflow-groups", groups)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body), rec.Result().Header
}

// eventually asks until the body holds every want (the cache catches up
// within a second or two), and returns the last answer.
func eventually(t *testing.T, h http.Handler, target, user, groups string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body, _ := get(t, h, target, user, groups)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
				break
			}
		}
		if code == http.StatusOK && missing == "" {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s as %s: %d, body lacks %q:\n%s", target, user, code, missing, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// labels returns profilekit's labels of plugin kind for Profile name.
func labels(kind, name string) map[string]string {
	return map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: kind, plugins.LabelProfile: name}
}

// tenant makes a namespace and its Profile owned by owner, with conditions.
func tenant(t *testing.T, prefix, owner string, conds ...kubeflowv1.ProfileCondition) string {
	t.Helper()
	ctx := t.Context()
	name := prefix + "-" + rand.String(5)
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "research"}},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: owner}}}
	must(t, env.Client.Create(ctx, p))
	if len(conds) > 0 {
		p.Status.Conditions = conds
		must(t, env.Client.Status().Update(ctx, p))
	}
	return name
}

// bind gives subject (a User or a Group) role in ns as KFAM does: a
// RoleBinding to viewRole with KFAM's annotations, made by plugin kind.
func bind(t *testing.T, ns, kind, subjectKind, subject, role string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(kind + "-" + rand.String(6)), Namespace: ns, Labels: labels(kind, ns),
			Annotations: map[string]string{"user": subject, "role": role}},
		Subjects: []rbacv1.Subject{{Kind: subjectKind, Name: subject, APIGroup: rbacv1.GroupName}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewRole},
	}
	must(t, env.Client.Create(t.Context(), rb))
}

// viewClusterRole makes viewRole once.
func viewClusterRole(t *testing.T) {
	t.Helper()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: viewRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}
	if err := env.Client.Create(t.Context(), cr); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func metav1ObjectKey(ns, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: ns, Name: name}
}
