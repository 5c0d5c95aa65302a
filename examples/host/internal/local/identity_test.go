package local

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAsUser: a request from the machine itself is the --as user whatever
// it sends, with no groups; a request from elsewhere passes as it came, so
// the page still asks it for the gateway's header.
func TestAsUser(t *testing.T) {
	for _, tc := range []struct {
		reason, remote, sentUser, sentGroups string
		wantUser, wantGroups                 string
	}{
		{"IPv4 loopback, nothing sent", "127.0.0.1:50000", "", "", "acct:alice@example.org", ""},
		{"IPv6 loopback, another user and groups sent", "[::1]:50000", "acct:mallory", "admins", "acct:alice@example.org", ""},
		{"IPv4 loopback as IPv6", "[::ffff:127.0.0.1]:50000", "", "", "acct:alice@example.org", ""},
		{"another machine, nothing sent", "10.1.2.3:50000", "", "", "", ""},
		{"another machine with its own header", "10.1.2.3:50000", "acct:bob", "team", "acct:bob", "team"},
		{"no address", "", "", "", "", ""},
	} {
		var gotUser, gotGroups string
		h := AsUser("kubeflow-userid", "acct:", "kubeflow-groups", "alice@example.org")(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			gotUser, gotGroups = r.Header.Get("kubeflow-userid"), r.Header.Get("kubeflow-groups")
		}))
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = tc.remote
		if tc.sentUser != "" {
			req.Header.Set("kubeflow-userid", tc.sentUser)
		}
		if tc.sentGroups != "" {
			req.Header.Set("kubeflow-groups", tc.sentGroups)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		if gotUser != tc.wantUser || gotGroups != tc.wantGroups {
			t.Errorf("%s: the page saw user %q groups %q, want %q %q", tc.reason, gotUser, gotGroups, tc.wantUser, tc.wantGroups)
		}
		if tc.sentUser != req.Header.Get("kubeflow-userid") {
			t.Errorf("%s: the caller's request was changed", tc.reason)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8082": true,
		"127.0.0.2:8082": true,
		"[::1]:8082":     true,
		"localhost:8082": true,
		":8082":          false,
		"0.0.0.0:8082":   false,
		"10.0.0.1:8082":  false,
		"example.org:80": false,
		"127.0.0.1":      false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
