package upstream_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream"
	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream/profilev1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	azuremock "github.com/profilekit/profilekit/plugins/azureidentity/iammock"
	"github.com/profilekit/profilekit/plugins/irsa"
	awsmock "github.com/profilekit/profilekit/plugins/irsa/iammock"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	gcpmock "github.com/profilekit/profilekit/plugins/workloadidentity/iammock"
)

// TestForkDrivesCloudIdentity runs a Profile written for the upstream
// controller, with upstream's exact WorkloadIdentity and
// AwsIamForServiceAccount entries (and the Azure plugin beside them), through
// the adapter against the real API server, with mocked cloud IAM.
func TestForkDrivesCloudIdentity(t *testing.T) {
	ctx := t.Context()
	const (
		name     = "fork-identity"
		gsa      = "kf-user@proj-123.iam.gserviceaccount.com"
		roleARN  = "arn:aws:iam::111122223333:role/team-role"
		provider = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
		identity = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a"
		clientID = "11111111-1111-1111-1111-111111111111"
		issuer   = "https://oidc.example.org/cluster/"
	)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	// The upstream controller makes default-editor; someone annotated it by hand.
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", map[string]string{"team.example.org/contact": "alice"})
	ours := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{
			{TypeMeta: metav1.TypeMeta{Kind: "WorkloadIdentity"}, Spec: &runtime.RawExtension{Raw: []byte(`{"gcpServiceAccount":"` + gsa + `"}`)}},
			{TypeMeta: metav1.TypeMeta{Kind: "AwsIamForServiceAccount"}, Spec: &runtime.RawExtension{Raw: []byte(`{"awsIamRole":"` + roleARN + `","annotateOnly":false}`)}},
			{TypeMeta: metav1.TypeMeta{Kind: "AzureWorkloadIdentity"}, Spec: &runtime.RawExtension{Raw: []byte(`{"identity":"` + identity + `","clientId":"` + clientID + `"}`)}},
		}},
	}
	if err := env.Client.Create(ctx, ours); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteProfile(t, name) })

	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	gcp := gcpmock.NewMockIAM(ctrl)
	aws := awsmock.NewMockIAM(ctrl)
	azure := azuremock.NewMockCredentials(ctrl)
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"oidc.eks.eu-west-1.amazonaws.com/id/ABC123:sub":"system:serviceaccount:ops:runner"}}}]}`
	policy := &iam.Policy{Etag: "e1"}
	resource := "projects/proj-123/serviceAccounts/" + gsa
	ref := azureidentity.IdentityRef{Subscription: "00000000-0000-0000-0000-000000000000", ResourceGroup: "kubeflow", Name: "team-a"}
	// Apply: one read and one write each.
	gcp.EXPECT().Policy(gomock.Any(), resource).Return(policy, nil).Times(1)
	gcp.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).Return(nil).Times(1)
	aws.EXPECT().TrustPolicy(gomock.Any(), "team-role").Return(trust, nil).Times(1)
	aws.EXPECT().SetTrustPolicy(gomock.Any(), "team-role", gomock.Any()).DoAndReturn(func(_ context.Context, _, doc string) error {
		trust = doc
		return nil
	}).Times(1)
	credName := "profilekit-" + name + "_default-editor"
	var credential azureidentity.Credential
	azure.EXPECT().Get(gomock.Any(), ref, credName).Return(azureidentity.Credential{}, false, nil).Times(1)
	azure.EXPECT().Put(gomock.Any(), ref, credName, gomock.Any()).DoAndReturn(func(_ context.Context, _ azureidentity.IdentityRef, _ string, c azureidentity.Credential) error {
		credential = c
		return nil
	}).Times(1)

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = profilev1.AddToScheme(scheme)
	counter := &testenv.Counter{}
	c, err := client.New(counter.Counting(env.Config), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := &upstream.ProfileReconciler{
		Client: c, Scheme: scheme, Log: testr.New(t),
		AWSIAM: aws, GCPIAM: gcp, AzureCredentials: azure,
		AWSDefaults:   []byte(`{"allowedIdentities":[{"identity":"` + roleARN + `"}]}`),
		GCPDefaults:   []byte(`{"allowedIdentities":[{"identity":"` + gsa + `"}]}`),
		AzureDefaults: []byte(`{"issuer":"` + issuer + `","allowedIdentities":[{"identity":"` + identity + `"}]}`),
	}
	if r.Profilekit, err = r.NewProfilekit(); err != nil {
		t.Fatal(err)
	}
	var profile profilev1.Profile
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &profile); err != nil {
		t.Fatal(err)
	}
	ps, err := r.GetPluginSpec(&profile)
	if err != nil || len(ps) != 1 {
		t.Fatalf("GetPluginSpec = %d plugins, %v; want the profilekit plugins alone", len(ps), err)
	}
	for _, p := range ps {
		if err := p.ApplyPlugin(r, &profile); err != nil {
			t.Fatalf("ApplyPlugin: %v", err)
		}
	}
	var sa corev1.ServiceAccount
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "default-editor"}, &sa); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"team.example.org/contact":       "alice",
		workloadidentity.AnnotationGSA:   gsa,
		irsa.AnnotationRoleARN:           roleARN,
		azureidentity.AnnotationClientID: clientID,
	}
	if diff := cmp.Diff(want, sa.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if bs := policy.Bindings; len(bs) != 1 || bs[0].Role != workloadidentity.RoleWorkloadIdentityUser || bs[0].Members[0] != "serviceAccount:proj-123.svc.id.goog["+name+"/default-editor]" {
		t.Errorf("GCP policy bindings = %+v", bs)
	}
	if has, err := trustpolicy.HasSubjects(trust, trustpolicy.Edit{Provider: provider, Subjects: []string{"system:serviceaccount:" + name + ":default-editor", "system:serviceaccount:ops:runner"}}); err != nil || !has {
		t.Errorf("trust policy lacks our or the other subject (%v):\n%s", err, trust)
	}

	// A second pass: no cloud call (the mocks allow none) and no mutating request.
	counter.Reset()
	for _, p := range ps {
		if err := p.ApplyPlugin(r, &profile); err != nil {
			t.Fatalf("second ApplyPlugin: %v", err)
		}
	}
	if got := counter.Mutating(); len(got) != 0 {
		t.Errorf("second ApplyPlugin sent mutating requests %v, want none", got)
	}

	// Revoke: our member, subject, credential and annotations go.
	revoked := &iam.Policy{Etag: "e2", Bindings: policy.Bindings}
	gcp.EXPECT().Policy(gomock.Any(), resource).Return(revoked, nil).Times(1)
	gcp.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).Return(nil).Times(1)
	aws.EXPECT().TrustPolicy(gomock.Any(), "team-role").DoAndReturn(func(context.Context, string) (string, error) { return trust, nil }).Times(1)
	aws.EXPECT().SetTrustPolicy(gomock.Any(), "team-role", gomock.Any()).DoAndReturn(func(_ context.Context, _, doc string) error {
		trust = doc
		return nil
	}).Times(1)
	azure.EXPECT().Get(gomock.Any(), ref, credName).DoAndReturn(func(context.Context, azureidentity.IdentityRef, string) (azureidentity.Credential, bool, error) {
		return credential, true, nil
	}).Times(1)
	azure.EXPECT().Delete(gomock.Any(), ref, credName).Return(nil).Times(1)
	for _, p := range ps {
		if err := p.RevokePlugin(r, &profile); err != nil {
			t.Fatalf("RevokePlugin: %v", err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&sa), &sa); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"team.example.org/contact": "alice"}, sa.Annotations); diff != "" {
		t.Errorf("annotations after revoke (-want +got):\n%s", diff)
	}
	if len(revoked.Bindings) != 0 {
		t.Errorf("GCP bindings after revoke = %+v, want the empty binding dropped", revoked.Bindings)
	}
	if has, _ := trustpolicy.HasSubjects(trust, trustpolicy.Edit{Provider: provider, Subjects: []string{"system:serviceaccount:ops:runner"}}); !has {
		t.Errorf("revoke removed the other subject:\n%s", trust)
	}
	ctrl.Finish()
}
