package page_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/reconcilers"
)

// overviewRole is the ClusterRole the kustomize base ships for the
// overview (the chart's is the same: TestOverviewRole in examples/host).
const overviewRole = "profilekit-overview"

// hostOn starts a manager with the host's cache settings on cfg, and
// returns the tenant page and the overview (with opts; a metrics registry
// of its own unless opts has one, and a client on cfg as its API reader
// unless it has one) on one mux, as the host serves them, asking
// SubjectAccessReviews of a client on cfg. The overview's Start runs with
// the manager.
func hostOn(tb testing.TB, cfg *rest.Config, opts page.OverviewOptions) http.Handler {
	tb.Helper()
	s, err := server.NewScheme()
	if err != nil {
		tb.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme: s, Cache: reconcilers.CacheOptions(nil), Client: reconcilers.ClientOptions(),
		MapperProvider: reconcilers.NewRESTMapper, Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	members, err := page.NewMembers(mgr)
	if err != nil {
		tb.Fatal(err)
	}
	api, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // the manager serves the cleanups, which run after t.Context is canceled
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("manager: %v", err)
		}
	})
	h := page.New(mgr.GetClient(), s, page.NewAccess(api, 30*time.Second, 100), page.Options{
		UserIDHeader: "kubeflow-userid", UserIDPrefix: "accounts.example.org:", GroupsHeader: "kubeflow-groups",
		Whole: page.WholeKinds, Members: members,
	})
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	if opts.API == nil {
		opts.API = api
	}
	o := page.NewOverview(h, opts)
	go func() { _ = o.Start(ctx) }()
	return page.NewMux(h, o)
}

// admins makes the overview's ClusterRole, read from the kustomize base,
// once, and binds it cluster-wide to the subjects (kind and name).
func admins(tb testing.TB, subjects ...rbacv1.Subject) {
	tb.Helper()
	ctx := context.Background() //nolint:forbidigo // benchmarks call it too
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "deploy", "base", "overview-role.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &cr); err != nil {
		tb.Fatal(err)
	}
	if cr.Name != overviewRole {
		tb.Fatalf("the kustomize base's overview role is %q, want %q", cr.Name, overviewRole)
	}
	if err := env.Client.Create(ctx, &cr); client.IgnoreAlreadyExists(err) != nil {
		tb.Fatal(err)
	}
	for i := range subjects {
		subjects[i].APIGroup = rbacv1.GroupName
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "overview-admins-" + rand.String(6)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: overviewRole},
		Subjects: subjects}
	if err := env.Client.Create(ctx, crb); err != nil {
		tb.Fatal(err)
	}
}

// profile makes a Profile, no namespace, with labels and conditions.
func profile(tb testing.TB, prefix, owner string, labels map[string]string, conds ...kubeflowv1.ProfileCondition) *kubeflowv1.Profile {
	tb.Helper()
	ctx := context.Background() //nolint:forbidigo // benchmarks call it too
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5), Labels: labels},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: owner}}}
	if err := env.Client.Create(ctx, p); err != nil {
		tb.Fatal(err)
	}
	if len(conds) > 0 {
		p.Status.Conditions = conds
		if err := env.Client.Status().Update(ctx, p); err != nil {
			tb.Fatal(err)
		}
	}
	return p
}

// ready returns the conditions of a Profile that the plugins of these
// condition types serve, all True, as the host writes them.
func ready(types ...string) []kubeflowv1.ProfileCondition {
	conds := []kubeflowv1.ProfileCondition{{Type: "Ready", Status: "True", Message: fmt.Sprintf("PluginsReady: %d plugins ready", len(types))}}
	for _, t := range types {
		conds = append(conds, kubeflowv1.ProfileCondition{Type: t, Status: "True", Message: "Applied: 1 object in sync"})
	}
	return conds
}
