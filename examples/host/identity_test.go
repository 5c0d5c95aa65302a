package main

import (
	"strings"
	"testing"
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
