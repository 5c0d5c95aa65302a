package contributors_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
)

// TestBindingNameIsKFAMs holds the names the access-management service
// computes, its own test's among them (a role as the dashboard sends it,
// edit, and the roleRef kind, which KFAM lower-cases).
func TestBindingNameIsKFAMs(t *testing.T) {
	tests := []struct {
		reason           string
		kind, name, role string
		want             string
	}{
		{"KFAM's own test: dots and @ become -", "User", "lalith.vaka@zq.msds.kp.org", "edit", "user-lalith-vaka-zq-msds-kp-org-clusterrole-edit"},
		{"KFAM's own test: digits stay", "User", "397401@zq.msds.kp.org", "edit", "user-397401-zq-msds-kp-org-clusterrole-edit"},
		{"the role, not its ClusterRole, ends the name", "User", "bob@example.org", "view", "user-bob-example-org-clusterrole-view"},
		{"upper case is lowered", "User", "Bob.Smith@Example.org", "admin", "user-bob-smith-example-org-clusterrole-admin"},
		{"a run of other characters is one -, even at the ends", "User", "--a__b++@@c..", "edit", "user-a-b-c-clusterrole-edit"},
		{"letters beyond ASCII are other characters too", "User", "zoë@example.org", "edit", "user-zo-example-org-clusterrole-edit"},
		{"a group", "Group", "team-a@example.org", "view", "group-team-a-example-org-clusterrole-view"},
		{"a service account: its namespace is not in the name", "ServiceAccount", "runner", "edit", "serviceaccount-runner-clusterrole-edit"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if got := contributors.BindingName(tc.kind, tc.name, tc.role); got != tc.want {
				t.Errorf("BindingName(%q, %q, %q) = %q, want %q", tc.kind, tc.name, tc.role, got, tc.want)
			}
		})
	}
}

func TestClusterRole(t *testing.T) {
	for role, want := range map[string]string{"admin": "kubeflow-admin", "edit": "kubeflow-edit", "view": "kubeflow-view", "cluster-admin": "", "": ""} {
		if got := contributors.ClusterRole(role); got != want {
			t.Errorf("ClusterRole(%q) = %q, want %q", role, got, want)
		}
	}
}

// upstreamNames are the upstream controller's names, which no plugin but
// core may write; the test checks that plugins agrees.
var upstreamNames = []string{"namespaceAdmin", "default-editor", "default-viewer", "ns-owner-access-istio", "kf-resource-quota"}

// kfamShape is the shape of every name BindingName gives: the kind, runs of
// letters and digits joined by single dashes, the role.
var kfamShape = regexp.MustCompile(`^(user|group|serviceaccount)(-[a-z0-9]+)*-clusterrole-(admin|edit|view)$`)

// TestNoUpstreamNameHasTheShape proves that no entry can name an upstream
// object: every name BindingName gives has kfamShape (see the fuzz test),
// and no upstream name has it.
func TestNoUpstreamNameHasTheShape(t *testing.T) {
	for _, n := range upstreamNames {
		if !plugins.IsUpstreamName(n) {
			t.Errorf("%s: plugins does not count it as upstream's", n)
		}
		if kfamShape.MatchString(n) || kfamShape.MatchString(strings.ToLower(n)) {
			t.Errorf("%s has the shape of a contributor's binding name", n)
		}
	}
}

// FuzzBindingNameShape: whatever the name, the binding name of an allowed
// kind and role has kfamShape, is a valid object name unless too long, and
// is not upstream's.
func FuzzBindingNameShape(f *testing.F) {
	for _, s := range []string{"namespaceAdmin", "default-editor", "ns-owner-access-istio", "", "@", "a%2Fb", "*", "ÄÖ", "-clusterrole-admin"} {
		f.Add(s, uint8(0), uint8(0))
	}
	kinds := []string{"User", "Group", "ServiceAccount"}
	roles := []string{"admin", "edit", "view"}
	f.Fuzz(func(t *testing.T, name string, k, r uint8) {
		kind, role := kinds[int(k)%len(kinds)], roles[int(r)%len(roles)]
		got := contributors.BindingName(kind, name, role)
		if !kfamShape.MatchString(got) {
			t.Fatalf("BindingName(%q, %q, %q) = %q: not of the shape %s", kind, name, role, got, kfamShape)
		}
		if plugins.IsUpstreamName(got) {
			t.Fatalf("BindingName(%q, %q, %q) = %q: upstream's", kind, name, role, got)
		}
		if err := plugins.CheckObjectName(got); err != nil && len(got) <= 253 {
			t.Fatalf("BindingName(%q, %q, %q) = %q: %v", kind, name, role, got, err)
		}
	})
}
