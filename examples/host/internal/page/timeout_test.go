package page_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/examples/host/internal/server"
)

// stuck is a cache whose informers never sync, as for a kind the host may
// not list: every read waits until its context ends.
type stuck struct{ client.Reader }

func (stuck) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stuck) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestStuckCacheAnswers503: a view the cache cannot answer ends at the
// page's timeout with 503 and no data, on the tenant page and the
// overview alike, instead of holding the request open.
func TestStuckCacheAnswers503(t *testing.T) {
	s, err := server.NewScheme()
	must(t, err)
	admins(t, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "stuck-admin@example.org"})
	h := page.New(stuck{}, s, page.NewAccess(env.Client, time.Minute, 10), page.Options{
		UserIDHeader: "kubeflow-userid", Members: stuck{}, Timeout: 300 * time.Millisecond})
	mux := page.NewMux(h, page.NewOverview(h, page.OverviewOptions{}))
	for _, target := range []string{"/", "/?ns=team-a", "/overview"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("kubeflow-userid", "stuck-admin@example.org")
		done := make(chan struct{})
		go func() { mux.ServeHTTP(rec, req); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("GET %s on a stuck cache: no answer after 30s", target)
		}
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "cannot be shown right now") {
			t.Errorf("GET %s on a stuck cache: %d %q, want 503 and the try-again text", target, rec.Code, rec.Body.String())
		}
	}
}
