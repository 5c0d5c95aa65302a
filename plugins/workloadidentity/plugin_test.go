package workloadidentity_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/plugins/workloadidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	condType = "WorkloadIdentityReady"
	gsa      = "kf-user@proj-123.iam.gserviceaccount.com"
	// allowed lets the Profiles of every test act as the test account,
	// shared: Profiles of earlier tests may still hold it.
	allowed  = `"allowedIdentities":[{"identity":"` + gsa + `","shared":true}]`
	resource = "projects/proj-123/serviceAccounts/" + gsa
	admin    = "user:admin@example.org"
)

// account is Google IAM's side of the test: one service account's policy,
// with an etag that changes on every write, as the real API does.
type account struct {
	mu     sync.Mutex
	policy *iam.Policy
	writes int
}

func (a *account) get(_ context.Context, _ string) (*iam.Policy, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &iam.Policy{Etag: a.policy.Etag, Version: a.policy.Version}
	for _, b := range a.policy.Bindings {
		out.Bindings = append(out.Bindings, &iam.Binding{Role: b.Role, Members: append([]string(nil), b.Members...), Condition: b.Condition})
	}
	return out, nil
}

func (a *account) set(_ context.Context, _ string, p *iam.Policy) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p.Etag != a.policy.Etag {
		return workloadidentity.ErrConcurrentChange
	}
	a.writes++
	p.Etag = strings.Repeat("e", a.writes+1)
	a.policy = p
	return nil
}

// changeBehindOurBack is someone else's write between our read and ours.
func (a *account) changeBehindOurBack() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policy.Etag += "x"
}

func (a *account) bindings() []*iam.Binding {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.policy.Bindings
}

func entry(spec string) kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: workloadidentity.Kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}
}

func annotationsAre(want map[string]string) func(*corev1.ServiceAccount) (bool, string) {
	return func(sa *corev1.ServiceAccount) (bool, string) {
		d := cmp.Diff(want, sa.Annotations)
		return d == "", "annotations (-want +got):\n" + d
	}
}

func TestWorkloadIdentityLifecycle(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	api := iammock.NewMockIAM(ctrl)
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: []*iam.Binding{{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{admin}}}}}
	// The first write loses to a concurrent change, and is redone on a
	// fresh read.
	first := true
	api.EXPECT().Policy(gomock.Any(), resource).DoAndReturn(func(ctx context.Context, r string) (*iam.Policy, error) {
		p, err := acct.get(ctx, r)
		if first {
			first = false
			acct.changeBehindOurBack()
		}
		return p, err
	}).Times(2)
	api.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).DoAndReturn(acct.set).Times(2)

	h := testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(api), Options: []reconcilers.Option{allow(""), reconcilers.WithResync(300 * time.Millisecond)}})
	name := "wi-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "ServiceAccount "+name+"/default-editor does not exist yet")
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", map[string]string{"team.example.org/contact": "alice"})
	sa := testhost.WaitServiceAccount(t, env.Client, name, "default-editor",
		annotationsAre(map[string]string{"team.example.org/contact": "alice", workloadidentity.AnnotationGSA: gsa}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	t.Run("the member is granted after the etag conflict; other bindings stay", func(t *testing.T) {
		want := []*iam.Binding{
			{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{admin}},
			{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}},
		}
		if diff := cmp.Diff(want, acct.bindings()); diff != "" {
			t.Errorf("bindings (-want +got):\n%s", diff)
		}
	})

	t.Run("our field manager owns the one annotation key", func(t *testing.T) {
		want := []string{`Apply {"f:metadata":{"f:annotations":{"f:` + workloadidentity.AnnotationGSA + `":{}}}}`}
		if diff := cmp.Diff(want, testhost.FieldsOf(sa, plugins.FieldManagerFor(workloadidentity.Kind))); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
	})

	t.Run("a resync makes no IAM call and sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, workloadidentity.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("revoke removes our member, the empty binding and our annotation", func(t *testing.T) {
		// Written once; a further pass of the revoke, failing closed,
		// reads the policy again and finds nothing of ours.
		api.EXPECT().Policy(gomock.Any(), resource).DoAndReturn(acct.get).MinTimes(1)
		api.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).DoAndReturn(acct.set).Times(1)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{"team.example.org/contact": "alice"}))
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
		})
		want := []*iam.Binding{{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{admin}}}
		if diff := cmp.Diff(want, acct.bindings()); diff != "" {
			t.Errorf("bindings after revoke (-want +got):\n%s", diff)
		}
		// And the revoke says so: the member deleted, the annotation
		// taken off.
		testhost.WaitRevoked(t, env.Client, name, workloadidentity.Kind, "1 configured, 1 deleted")
	})
	ctrl.Finish()
}

func TestMalformedAccountIsAConditionNotAPanic(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	api := iammock.NewMockIAM(ctrl) // no expectations: any call fails the test
	testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(api), Options: []reconcilers.Option{allow("")}})
	for _, value := range []string{"x", "alice@example.org", ".iam.gserviceaccount.com"} {
		name := "wi-bad-" + rand.String(5)
		testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+value+`"}`))
		testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `InvalidSpec: spec.plugins[0] (WorkloadIdentity).spec: gcpServiceAccount "`+value+`": not a Google service account email`)
	}
	ctrl.Finish()
}

// The host default serves every Profile, as the upstream controller's
// -workload-identity flag does.
func TestHostDefaultForEveryProfile(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	api := iammock.NewMockIAM(ctrl)
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	// Call counts are the lifecycle test's; here a Profile left by an earlier
	// test in the shared control plane may be revoked by this host too.
	api.EXPECT().Policy(gomock.Any(), resource).DoAndReturn(acct.get).MinTimes(1)
	api.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).DoAndReturn(acct.set).MinTimes(1)
	name := "wi-default-" + rand.String(5)
	// The selector keeps the other tests' Profiles out of this host.
	testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(api), Options: []reconcilers.Option{
		allow(`,"gcpServiceAccount":"` + gsa + `"`),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name})
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{workloadidentity.AnnotationGSA: gsa}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if !workloadidentity.HasMembers(&iam.Policy{Bindings: acct.bindings()}, workloadidentity.RoleWorkloadIdentityUser, []string{"serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"}) {
		t.Errorf("bindings %+v lack the Profile's member", acct.bindings())
	}
	ctrl.Finish()
}

// allow returns the host defaults that allow the test account, with extra
// (",\"key\":value...") after them.
func allow(extra string) reconcilers.Option {
	return reconcilers.WithDefaults([]byte("{" + allowed + extra + "}"))
}
