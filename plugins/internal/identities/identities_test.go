package identities_test

import (
	"github.com/google/go-cmp/cmp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/identities"
)

func TestAllow(t *testing.T) {
	const role = "arn:aws:iam::111122223333:role/"
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}}
	policy := identities.Policy{
		{Identity: role + "kf-{{ .Namespace }}"},
		{Identity: role + "ml-team", ProfileSelector: team, Shared: true},
	}
	profile := func(name string, labels map[string]string) *kubeflowv1.Profile {
		return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	tests := []struct {
		reason     string
		policy     identities.Policy
		profile    *kubeflowv1.Profile
		identity   string
		wantShared bool
		wantErr    string // in part; "" for none
	}{
		{reason: "its own role, from the template", policy: policy, profile: profile("alice", nil), identity: role + "kf-alice"},
		{reason: "another Profile's role from the template", policy: policy, profile: profile("alice", nil), identity: role + "kf-bob", wantErr: "is not among the identities the host allows this Profile"},
		{reason: "a team role, selected", policy: policy, profile: profile("alice", map[string]string{"team": "ml"}), identity: role + "ml-team", wantShared: true},
		{reason: "a team role, not selected", policy: policy, profile: profile("mallory", map[string]string{"team": "ops"}), identity: role + "ml-team", wantErr: "is not among the identities the host allows this Profile"},
		{reason: "a role the template's prefix only resembles", policy: policy, profile: profile("alice", nil), identity: role + "kf-alice-admin", wantErr: "is not among the identities the host allows this Profile"},
		{reason: "no policy denies everything, and says so", profile: profile("alice", nil), identity: role + "kf-alice", wantErr: "the host allows no identity (allowedIdentities is empty)"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := tt.policy.Allow(tt.profile, tt.identity)
			if err == nil && tt.wantErr != "" || err != nil && (tt.wantErr == "" || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Allow(%q) error = %v, want %q", tt.identity, err, tt.wantErr)
			}
			if err != nil && plugins.ReasonOf(err, "") != identities.ReasonNotAllowed {
				t.Errorf("reason = %q, want %q", plugins.ReasonOf(err, ""), identities.ReasonNotAllowed)
			}
			if err == nil && got.Shared != tt.wantShared {
				t.Errorf("shared = %v, want %v", got.Shared, tt.wantShared)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	bad := identities.Policy{
		{Identity: ""},
		{Identity: "arn:aws:iam::1:role/{{ .Owner }}"},
		{Identity: "x", ProfileSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sideways"}}}},
		{Tag: &identities.Tag{Key: " ", Value: "{{ .Namespace }}"}},
		{Tag: &identities.Tag{Key: "team", Value: "{{ .Owner }}"}},
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate accepted an empty identity, an unknown placeholder and a bad selector")
	}
	for _, want := range []string{"allowedIdentities[0].identity: required", "allowedIdentities[1].identity", "allowedIdentities[2].profileSelector",
		"allowedIdentities[3].tag.key: required", "allowedIdentities[4].tag.value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := (identities.Policy{{Identity: "{{ .Namespace }}@p.iam.gserviceaccount.com"}, {Tag: &identities.Tag{Key: "profilekit.dev/namespace", Value: "{{ .Namespace }}"}}}).Validate(); err != nil {
		t.Errorf("a valid policy: %v", err)
	}
}

// TestNamed: the identities a policy's templates give a Profile, each once;
// an allowance by tag alone names none.
func TestNamed(t *testing.T) {
	policy := identities.Policy{
		{Tag: &identities.Tag{Key: "profilekit.dev/namespace", Value: "{{ .Namespace }}"}},
		{Identity: "kf-{{ .Profile }}"},
		{Identity: "team-ml", ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}}},
		{Identity: "kf-{{ .Namespace }}"},
	}
	alice := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "alice", Labels: map[string]string{"team": "ml"}}}
	if diff := cmp.Diff([]string{"kf-alice", "team-ml"}, policy.Named(alice)); diff != "" {
		t.Errorf("Named (-want +got):\n%s", diff)
	}
}

func TestCheckTag(t *testing.T) {
	tagged := identities.Policy{{Tag: &identities.Tag{Key: "profilekit.dev/namespace", Value: "{{ .Namespace }}"}}}
	alice := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "alice"}}
	const role = "arn:aws:iam::111122223333:role/any"
	a, err := tagged.Allow(alice, role)
	if err != nil || !a.NeedsTag() {
		t.Fatalf("Allow with a tag allowance = %+v, %v; want it, asking for the tag", a, err)
	}
	tests := []struct {
		reason  string
		tags    map[string]string
		wantErr bool
	}{
		{reason: "tagged for the Profile's namespace", tags: map[string]string{"profilekit.dev/namespace": "alice"}},
		{reason: "tagged for another namespace", tags: map[string]string{"profilekit.dev/namespace": "bob"}, wantErr: true},
		{reason: "not tagged", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			err := a.CheckTag(alice, role, tt.tags)
			if (err != nil) != tt.wantErr || err != nil && plugins.ReasonOf(err, "") != identities.ReasonNotAllowed {
				t.Errorf("CheckTag(%v) = %v, want error %v with reason %s", tt.tags, err, tt.wantErr, identities.ReasonNotAllowed)
			}
		})
	}
}
