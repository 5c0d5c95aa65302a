package testenv_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/profilekit/profilekit/internal/testenv"
)

// TestCounterTellsLandedFromRefused: a write the server refuses (a
// conflict) and sends again is counted once among the landed writes and
// once among the refused ones; reads are in neither.
func TestCounterTellsLandedFromRefused(t *testing.T) {
	conflicts := 1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && conflicts > 0 {
			conflicts--
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	var c testenv.Counter
	hc, err := rest.HTTPClientFor(c.Counting(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct{ verb, path string }{
		{http.MethodPut, "/apis/kubeflow.org/v1/profiles/a/status"},
		{http.MethodPut, "/apis/kubeflow.org/v1/profiles/a/status"},
		{http.MethodGet, "/apis/kubeflow.org/v1/profiles/a"},
		{http.MethodPatch, "/api/v1/namespaces/a"},
	} {
		r, err := http.NewRequestWithContext(t.Context(), req.verb, srv.URL+req.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if diff := cmp.Diff([]string{
		"PATCH /api/v1/namespaces/a",
		"PUT /apis/kubeflow.org/v1/profiles/a/status",
		"PUT /apis/kubeflow.org/v1/profiles/a/status",
	}, c.Mutating()); diff != "" {
		t.Errorf("sent writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PATCH /api/v1/namespaces/a", "PUT /apis/kubeflow.org/v1/profiles/a/status"}, c.Landed()); diff != "" {
		t.Errorf("landed writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PUT /apis/kubeflow.org/v1/profiles/a/status 409"}, c.Refused("/profiles/")); diff != "" {
		t.Errorf("refused writes (-want +got):\n%s", diff)
	}
	if got := c.Total(); got != 4 {
		t.Errorf("%d requests counted, want 4", got)
	}
}
