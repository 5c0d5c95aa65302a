package admission_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/outside"
)

// identityHost lets each Profile use the role of its namespace, one team
// role that serves one Profile at a time, and any role tagged for the
// Profile's namespace.
const identityHost = `
plugins:
  AwsIamForServiceAccount:
    enabled: listed
    defaults:
      serviceAccounts: [default-editor]
      oidcProvider: arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123
      allowedIdentities:
      - identity: "arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"
      - identity: arn:aws:iam::111122223333:role/team-role
      - identity: arn:aws:iam::111122223333:role/tagged
        tag: {key: profilekit.dev/namespace, value: "{{ .Namespace }}"}
`

// The webhook refuses what the host would refuse of a cloud identity: one
// the host's allowances do not give the Profile, and one another Profile
// holds (its claim and record read as the host reads them). Only the tag,
// read from the cloud, is left to the host, and the warning says exactly
// that.
func TestIdentityRefusals(t *testing.T) {
	reg, err := plugins.NewRegistry(irsa.Definition(nil)) // offline: no IAM call
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hostconfig.Parse("identity.yaml", []byte(identityHost), reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	records := unique("records")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: records}}); err != nil {
		t.Fatal(err)
	}
	// team-b holds the team role, as a host's pass leaves it: a claim and
	// the record of the role's trust.
	holder := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-b", UID: "uid-of-team-b"}}
	o := outside.New(env.Client, irsa.Kind, holder, outside.Options{Namespace: records})
	if who, err := o.Claim(t.Context(), "role/team-role"); err != nil || who != "" {
		t.Fatalf("claim: %q, %v", who, err)
	}
	if _, err := o.Ensure(t.Context(), irsa.System, "role/team-role", "trusts team-b", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	v := admission.New(cfg, reg, s, admission.WithClaims(env.Client, records))
	profile := func(name, role string) string {
		return `{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":"` + name + `"},"spec":{"owner":{"kind":"User","name":"a@example.org"},` +
			`"plugins":[{"kind":"AwsIamForServiceAccount","spec":{"awsIamRole":"arn:aws:iam::111122223333:role/` + role + `"}}]}}`
	}
	for _, tc := range []struct {
		reason, profile, denied, warning string
	}{
		{reason: "the role of its namespace", profile: profile("team-a", "kf-team-a")},
		{reason: "another namespace's role", profile: profile("team-a", "kf-team-c"),
			denied: `AwsIamForServiceAccountReady would be False: IdentityNotAllowed: identity "arn:aws:iam::111122223333:role/kf-team-c" is not among the identities the host allows this Profile`},
		{reason: "the team role another Profile holds", profile: profile("team-a", "team-role"),
			denied: `AwsIamForServiceAccountReady would be False: Conflict: awsIamRole "arn:aws:iam::111122223333:role/team-role" already serves Profile team-b`},
		{reason: "the team role, by the Profile that holds it", profile: profile("team-b", "team-role")},
		{reason: "a role allowed by its tag", profile: profile("team-a", "tagged"),
			warning: `AwsIamForServiceAccountReady: identity "arn:aws:iam::111122223333:role/tagged": the tag profilekit.dev/namespace that the host's allowance asks of it is read from the cloud when the host grants the identity; not checked here`},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			profiles, err := render.ReadProfiles(strings.NewReader(tc.profile), tc.reason)
			if err != nil {
				t.Fatal(err)
			}
			denied, warnings := v.Decide(t.Context(), nil, profiles[0])
			switch {
			case tc.denied == "" && len(denied) > 0:
				t.Errorf("denied: %q", denied)
			case tc.denied != "" && (len(denied) != 1 || !strings.Contains(denied[0], tc.denied)):
				t.Errorf("denied = %q, want %q", denied, tc.denied)
			}
			if tc.warning == "" && len(warnings) > 0 || tc.warning != "" && (len(warnings) != 1 || warnings[0] != tc.warning) {
				t.Errorf("warnings = %q, want %q", warnings, tc.warning)
			}
		})
	}
}
