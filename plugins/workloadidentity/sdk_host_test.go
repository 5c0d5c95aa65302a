package workloadidentity_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestSDKGooglePluginLifecycle runs the plugin's Apply and Revoke, in a host,
// through the iam/v1 client against the local Google IAM server: another
// writer changes the policy between the plugin's read and its write, and the
// plugin reads again and redoes its change.
func TestSDKGooglePluginLifecycle(t *testing.T) {
	srv, c := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator}})
	bob := fakecloud.GoogleBinding{Role: tokenCreator.Role, Members: []string{admin, "user:bob@example.org"}}
	srv.After("getIamPolicy", func() {
		srv.Write(resource, func(p *fakecloud.GooglePolicy) { p.Bindings[0].Members = bob.Members })
	})

	name := "wi-sdk-" + rand.String(5)
	h := testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(c), Options: []reconcilers.Option{
		allow(""), reconcilers.WithResync(300 * time.Millisecond),
		// Profiles of other tests in this control plane are not this host's.
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{workloadidentity.AnnotationGSA: gsa}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	ours := fakecloud.GoogleBinding{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{"serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"}}
	t.Run("the write that lost to another is redone on a fresh read, keeping the other's change", func(t *testing.T) {
		want := []string{"getIamPolicy 200", "setIamPolicy 409", "getIamPolicy 200", "setIamPolicy 200"}
		if diff := cmp.Diff(want, srv.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]fakecloud.GoogleBinding{bob, ours}, srv.Policy(resource).Bindings); diff != "" {
			t.Errorf("bindings the server holds (-want +got):\n%s", diff)
		}
	})

	t.Run("a resync calls Google IAM no more", func(t *testing.T) {
		before := len(srv.Calls())
		h.ResyncWrites(t, 3, workloadidentity.Kind)
		if got := srv.Calls()[before:]; len(got) != 0 {
			t.Errorf("calls on resync: %v", got)
		}
	})

	t.Run("revoke removes our member and keeps the rest", func(t *testing.T) {
		before := len(srv.Calls())
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		waitRevoked(t, name)
		// One write. A further pass of the revoke, failing closed, reads
		// the policy again and finds nothing of ours.
		calls := srv.Calls()[before:]
		writes := slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return c == "getIamPolicy 200" })
		if diff := cmp.Diff([]string{"setIamPolicy 200"}, writes); diff != "" || calls[0] != "getIamPolicy 200" {
			t.Errorf("calls %v; want a read, then one write (-want +got):\n%s", calls, diff)
		}
		if diff := cmp.Diff([]fakecloud.GoogleBinding{bob}, srv.Policy(resource).Bindings); diff != "" {
			t.Errorf("bindings the server holds (-want +got):\n%s", diff)
		}
	})
	if err := srv.WriteFile("/tmp/evidence/sdk-gcp-plugin-requests.txt"); err != nil {
		t.Errorf("request log: %v", err)
	}
}

// waitRevoked waits until our annotation and the Profile's finalizers are
// gone, which only a Revoke that succeeded allows.
func waitRevoked(t *testing.T, name string) {
	t.Helper()
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", func(sa *corev1.ServiceAccount) (bool, string) {
		_, ok := sa.Annotations[workloadidentity.AnnotationGSA]
		return !ok, "annotation still there"
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
	})
}
