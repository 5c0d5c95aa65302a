package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Rendering a Profile with the cloud identity plugins shows the annotation
// each would apply to default-editor, and says which cloud calls it skipped.
func TestRenderCloudIdentity(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/cloud-identity.yaml", "-f", "testdata/cloud-identity.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"iam.gke.io/gcp-service-account: kf-user@proj-123.iam.gserviceaccount.com",
		"eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/team-role",
		"azure.workload.identity/client-id: 11111111-1111-1111-1111-111111111111",
		"name: default-editor",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"plugin AwsIamForServiceAccount: skipped outside call AWSIAM role/team-role",
		"plugin WorkloadIdentity: skipped outside call GCPIAM grant/kf-user@proj-123.iam.gserviceaccount.com/serviceAccount:proj-123.svc.id.goog[team-cloud/default-editor]",
		"plugin AzureWorkloadIdentity: skipped outside call AzureIdentity credential/00000000-0000-0000-0000-000000000000/kubeflow/team-a/profilekit-team-cloud_default-editor",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("render notes lack %q:\n%s", want, stderr)
		}
	}
}

// validate refuses a Profile that names a role the host's allowances do
// not give it, with the message the plugin's condition would carry.
func TestValidateRefusedIdentity(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "validate", "--config", "config/cloud-identity.yaml", "-f", "testdata/refused-identity.yaml")
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"profile grab-role: denied",
		`AwsIamForServiceAccountReady would be False: IdentityNotAllowed: identity "arn:aws:iam::111122223333:role/kf-team-a" is not among the identities the host allows this Profile (allowedIdentities); nothing was granted`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	if strings.Contains(stderr, "not checked") {
		t.Errorf("stderr says the identity was not checked:\n%s", stderr)
	}
}

// validate with --kubeconfig reads, as the webhook does, the claims and the
// names' tenures in the host's records namespace: a Profile naming a role
// another Profile holds is denied, and so is a Profile of a name held for
// another owner; without --kubeconfig neither can be known offline.
func TestValidateReadsClaimsAndTenures(t *testing.T) {
	ctx := t.Context()
	records := "validate-" + rand.String(5)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: records}}); err != nil {
		t.Fatal(err)
	}
	role := "team-" + records
	dir := t.TempDir()
	cfg := filepath.Join(dir, "host.yaml")
	writeFile(t, cfg, `leaderElection: {namespace: `+records+`}
plugins:
  AwsIamForServiceAccount:
    enabled: listed
    defaults:
      oidcProvider: arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123
      allowedIdentities: [{identity: "arn:aws:iam::111122223333:role/`+role+`"}]
`)
	owner := func(n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n}
	}
	entry := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: irsa.Kind}, Spec: &runtime.RawExtension{Raw: []byte(`{"awsIamRole":"arn:aws:iam::111122223333:role/` + role + `"}`)}}
	holder := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "holder-" + records}, Spec: kubeflowv1.ProfileSpec{Owner: owner("alice@example.org"), Plugins: []kubeflowv1.Plugin{entry}}}
	if err := env.Client.Create(ctx, holder); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), holder) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	// The holder's pass, as the host makes it: the role recorded, then
	// claimed.
	held := outside.New(env.Client, irsa.Kind, holder, outside.Options{Namespace: records})
	if err := held.Intend(ctx, "role/"+role); err != nil {
		t.Fatal(err)
	}
	if other, err := held.Claim(ctx, "role/"+role); err != nil || other != "" {
		t.Fatalf("claim: %q, %v", other, err)
	}
	if err := held.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A name held for alice.
	tenures := outside.Tenures{Reader: env.Client, Writer: env.Client, Namespace: records}
	if err := tenures.Hold(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "gone-" + records, UID: "uid-of-the-deleted-profile"}, Spec: kubeflowv1.ProfileSpec{Owner: owner("alice@example.org")}}); err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(dir, "profiles.yaml")
	writeFile(t, profiles, `apiVersion: kubeflow.org/v1
kind: Profile
metadata: {name: taker-`+records+`}
spec:
  owner: {kind: User, name: mallory@example.org}
  plugins: [{kind: AwsIamForServiceAccount, spec: {awsIamRole: "arn:aws:iam::111122223333:role/`+role+`"}}]
---
apiVersion: kubeflow.org/v1
kind: Profile
metadata: {name: gone-`+records+`}
spec:
  owner: {kind: User, name: mallory@example.org}
`)
	code, out, stderr := runMain(ctx, "validate", "--config", cfg, "-f", profiles, "--kubeconfig", writeKubeconfig(t))
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"profile taker-" + records + ": denied",
		"Conflict: awsIamRole \"arn:aws:iam::111122223333:role/" + role + "\" already serves Profile holder-" + records,
		"profile gone-" + records + ": denied",
		"profilekit tenure release gone-" + records,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	t.Logf("validate --kubeconfig:\n%s", out)
	code, out, _ = runMain(ctx, "validate", "--config", cfg, "-f", profiles)
	if code != 0 {
		t.Errorf("offline, exit %d, want 0 (neither can be known without the cluster):\n%s", code, out)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
