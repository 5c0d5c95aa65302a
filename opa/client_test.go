package opa

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewClientURL(t *testing.T) {
	for _, bad := range []string{"http://", "https:///v1", "ftp://opa:8181", "opa:8181", "/v1/data", "http://opa:bad port"} {
		if _, err := NewClient(bad); err == nil {
			t.Errorf("NewClient(%q) = nil error, want one", bad)
		}
	}
	for _, good := range []string{"http://opa.gateway:8181", "https://opa"} {
		c, err := NewClient(good)
		if err != nil {
			t.Errorf("NewClient(%q) = %v, want a client", good, err)
			continue
		}
		if c.http.Timeout != 10*time.Second {
			t.Errorf("NewClient(%q): timeout %v, want 10s by default", good, c.http.Timeout)
		}
	}
}

// TestQueryHeaders: what the client sends to the real OPA, seen by a proxy
// in front of it: JSON accepted always, and a JSON body said to be JSON
// only when there is one.
func TestQueryHeaders(t *testing.T) {
	ctx := t.Context()
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][2]string{} // method: Accept, Content-Type
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method] = [2]string{r.Header.Get("Accept"), r.Header.Get("Content-Type")}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	if err := srv.PutData(ctx, "headertest/doc", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(front.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Query(ctx, "headertest/doc", nil); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("GET through the proxy = %s, %v", got, err)
	}
	if got, err := c.Query(ctx, "headertest/doc", map[string]any{"x": 1}); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("POST through the proxy = %s, %v", got, err)
	}
	want := map[string][2]string{http.MethodGet: {"application/json", ""}, http.MethodPost: {"application/json", "application/json"}}
	for m, w := range want {
		if seen[m] != w {
			t.Errorf("%s sent Accept %q, Content-Type %q; want %q, %q", m, seen[m][0], seen[m][1], w[0], w[1])
		}
	}
}

// TestQueryAnswerBound: an answer of exactly maxResponse bytes is read
// whole; one byte more is refused as too large, not cut and misread.
func TestQueryAnswerBound(t *testing.T) {
	answer := func(size int) string {
		const open, end = `{"result":"`, `"}`
		return open + strings.Repeat("x", size-len(open)-len(end)) + end
	}
	for _, tc := range []struct {
		size    int
		wantErr string
	}{
		{maxResponse, ""},
		{maxResponse + 1, "response larger than"},
	} {
		body := answer(tc.size)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
		c, err := NewClient(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Query(t.Context(), "big", nil)
		s.Close()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("an answer of %d bytes: %v, want it read", tc.size, err)
		case tc.wantErr == "" && len(got) != tc.size-len(`{"result":}`):
			t.Errorf("an answer of %d bytes: result of %d bytes, want %d", tc.size, len(got), tc.size-len(`{"result":}`))
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("an answer of %d bytes: %v, want an error with %q", tc.size, err, tc.wantErr)
		}
	}
}

// TestQueryServerError: an error OPA answers with says OPA's status, code
// and message; one that is not OPA's (a gateway's page) says the status.
func TestQueryServerError(t *testing.T) {
	ctx := t.Context()
	// Two values for one complete rule: OPA fails the evaluation.
	policy := "package errtest\n\nx := 1 if input.a\n\nx := 2 if input.b\n"
	if err := srv.PutPolicy(ctx, "errtest", []byte(policy)); err != nil {
		t.Fatal(err)
	}
	_, err := newClient(t).Query(ctx, "errtest/x", map[string]any{"a": true, "b": true})
	if err == nil || !strings.HasSuffix(err.Error(), "v1/data/errtest/x: 500 Internal Server Error: internal_error: error(s) occurred while evaluating query") {
		t.Errorf("a conflict in the policy: %v, want OPA's status, code and message", err)
	}
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	t.Cleanup(gateway.Close)
	c, err := NewClient(gateway.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(ctx, "errtest/x", nil)
	if err == nil || !strings.HasSuffix(err.Error(), ": 502 Bad Gateway") {
		t.Errorf("a gateway's error page: %v, want its status alone", err)
	}
}
